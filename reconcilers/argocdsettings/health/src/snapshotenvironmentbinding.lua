-- Argo CD health of a SnapshotEnvironmentBinding: its Ready condition when it
-- has one, else an ErrorOccurred binding condition or a Degraded component is
-- Degraded, AllComponentsDeployed True is Healthy, anything else Progressing.
local status = obj.status or {}
local hs = fromReady(status.conditions) or fromReady(status.bindingConditions)
if hs ~= nil then
  return hs
end
local err = condition(status.bindingConditions, "ErrorOccurred")
if failed(err) then
  return {status = "Degraded", message = err.message or ""}
end
if status.gitopsDeployments ~= nil then
  for _, d in ipairs(status.gitopsDeployments) do
    if d.health == "Degraded" then
      return {status = "Degraded", message = "Component " .. (d.componentName or "") .. " is Degraded"}
    end
  end
end
local deployed = condition(status.componentDeploymentConditions, "AllComponentsDeployed")
if deployed == nil then
  return {status = "Progressing", message = "Waiting for the components to be deployed"}
end
if deployed.status == "True" then
  return {status = "Healthy", message = deployed.message or ""}
end
if deployed.reason == "ErrorOccurred" then
  return {status = "Degraded", message = deployed.message or ""}
end
return {status = "Progressing", message = deployed.message or ""}
