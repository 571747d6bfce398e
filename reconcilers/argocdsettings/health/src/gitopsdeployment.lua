-- Argo CD health of a GitOpsDeployment: its Ready condition when it has one,
-- else an error of the GitOps Service (ErrorOccurred) or of Argo CD (its error
-- conditions, mirrored) is Degraded, else the health of its Argo CD
-- Application, mirrored into status.health.
local conditions = obj.status and obj.status.conditions
local hs = fromReady(conditions)
if hs ~= nil then
  return hs
end
if obj.status == nil then
  return {status = "Progressing", message = "Waiting for the GitOps Service"}
end
local err = condition(conditions, "ErrorOccurred")
if failed(err) then
  return {status = "Degraded", message = err.message or ""}
end
-- Argo CD's error conditions (its warnings are not failures).
for _, kind in ipairs({"InvalidSpecError", "ComparisonError", "SyncError", "DeletionError", "UnknownError"}) do
  local c = condition(conditions, kind)
  if failed(c) then
    return {status = "Degraded", message = kind .. ": " .. (c.message or "")}
  end
end
local health = obj.status.health and obj.status.health.status
local sync = (obj.status.sync and obj.status.sync.status) or "Unknown"
local known = {Healthy = true, Progressing = true, Degraded = true, Suspended = true, Missing = true, Unknown = true}
if health == nil or health == "" or not known[health] then
  return {status = "Progressing", message = "Waiting for Argo CD to assess the deployment (" .. sync .. ")"}
end
local message = sync .. "/" .. health
if obj.status.health.message ~= nil and obj.status.health.message ~= "" then
  message = message .. ": " .. obj.status.health.message
end
return {status = health, message = message}
