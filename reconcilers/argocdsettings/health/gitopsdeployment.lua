-- Argo CD health of a GitOpsDeployment: its Ready condition when it has one,
-- else an error of the GitOps Service (ErrorOccurred) or of Argo CD (its error
-- conditions, mirrored) is Degraded, else the health of its Argo CD
-- Application, mirrored into status.health.
-- Written by `make manifests` from src/gitopsdeployment.lua and src/common.lua: edit those.
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
