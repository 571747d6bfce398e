-- Argo CD health of a GitOpsDeploymentSyncRun: its Ready condition when it
-- has one, else the phase of the sync it started (Succeeded: Healthy; Failed,
-- Error: Degraded; Running, Terminating: Progressing); before it starts, a
-- refusal (ErrorOccurred) is Degraded and waiting its turn Progressing.
-- Written by `make manifests` from src/gitopsdeploymentsyncrun.lua and src/common.lua: edit those.
local function condition(conditions, kind)
  if conditions == nil then
    return nil
  end
  for _, c in ipairs(conditions) do
    if c.type == kind then
      return c
    end
  end
  return nil
end

-- A Ready condition (kstatus) decides when there is one and it describes the
-- current generation (its observedGeneration, else status.observedGeneration).
local function fromReady(conditions)
  local ready = condition(conditions, "Ready")
  if ready == nil then
    return nil
  end
  local observed = ready.observedGeneration
  if observed == nil and obj.status ~= nil then
    observed = obj.status.observedGeneration
  end
  if observed ~= nil and obj.metadata.generation ~= nil and observed ~= obj.metadata.generation then
    return {status = "Progressing", message = "Waiting for the GitOps Service to observe generation " .. obj.metadata.generation}
  end
  if ready.status == "True" then
    return {status = "Healthy", message = ready.message or ""}
  elseif ready.status == "False" then
    return {status = "Degraded", message = ready.message or ready.reason or ""}
  end
  return {status = "Progressing", message = ready.message or ""}
end

local function failed(c)
  return c ~= nil and c.status == "True"
end

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
