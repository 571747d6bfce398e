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

