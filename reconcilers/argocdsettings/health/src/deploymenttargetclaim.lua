-- Argo CD health of a DeploymentTargetClaim: its Ready condition when it has
-- one, else an error (ErrorOccurred True) or phase Lost is Degraded, Bound
-- Healthy, Pending (waiting for a target or its provisioner) Progressing.
local status = obj.status or {}
local hs = fromReady(status.conditions)
if hs ~= nil then
  return hs
end
local err = condition(status.conditions, "ErrorOccurred")
if failed(err) then
  return {status = "Degraded", message = err.message or ""}
end
if status.phase == "Lost" then
  return {status = "Degraded", message = "The bound DeploymentTarget was deleted"}
end
if status.phase == "Bound" then
  return {status = "Healthy", message = "Bound to " .. ((obj.spec and obj.spec.targetName) or "")}
end
return {status = "Progressing", message = (err and err.message) or "Waiting to be bound"}
