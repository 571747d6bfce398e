-- Argo CD health of a SnapshotEnvironmentBinding: its Ready condition when it
-- has one, else an ErrorOccurred binding condition or a Degraded component is
-- Degraded, AllComponentsDeployed True is Healthy, anything else Progressing.
-- Written by `make manifests` from src/snapshotenvironmentbinding.lua and src/common.lua: edit those.
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
