-- Argo CD health of an Environment: its Ready condition when it has one,
-- else an error (ErrorOccurred True) is Degraded, waiting for its
-- DeploymentTargetClaim to be bound Progressing, anything else Healthy (an
-- Environment that never had a problem has no condition).
local conditions = obj.status and obj.status.conditions
local hs = fromReady(conditions)
if hs ~= nil then
  return hs
end
local err = condition(conditions, "ErrorOccurred")
if failed(err) then
  return {status = "Degraded", message = err.message or ""}
end
if err ~= nil and err.reason == "DeploymentTargetClaimNotBound" then
  return {status = "Progressing", message = err.message or ""}
end
return {status = "Healthy", message = ""}
