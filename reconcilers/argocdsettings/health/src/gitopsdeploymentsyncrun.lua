-- Argo CD health of a GitOpsDeploymentSyncRun: its Ready condition when it
-- has one, else the phase of the sync it started (Succeeded: Healthy; Failed,
-- Error: Degraded; Running, Terminating: Progressing); before it starts, a
-- refusal (ErrorOccurred) is Degraded and waiting its turn Progressing.
local conditions = obj.status and obj.status.conditions
local hs = fromReady(conditions)
if hs ~= nil then
  return hs
end
local err = condition(conditions, "ErrorOccurred")
local message = (err and err.message) or ""
local phase = obj.status and obj.status.phase
if phase == "Succeeded" then
  return {status = "Healthy", message = message}
elseif phase == "Failed" or phase == "Error" then
  return {status = "Degraded", message = message}
elseif phase == "Running" or phase == "Terminating" then
  return {status = "Progressing", message = "Sync " .. phase}
end
if failed(err) then
  return {status = "Degraded", message = message}
end
return {status = "Progressing", message = "Waiting to start the sync"}
