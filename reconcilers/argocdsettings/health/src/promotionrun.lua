-- Argo CD health of a PromotionRun: its Ready condition when it has one,
-- else Completed with Success is Healthy, Completed with Failure or an error
-- (ErrorOccurred) Degraded, Waiting and Active Progressing.
local status = obj.status or {}
local hs = fromReady(status.conditions)
if hs ~= nil then
  return hs
end
local err = condition(status.conditions, "ErrorOccurred")
if status.state == "Completed" and status.completionResult == "Success" then
  return {status = "Healthy", message = "Promoted"}
end
if failed(err) then
  return {status = "Degraded", message = err.message or ""}
end
if status.state == "Completed" then
  return {status = "Degraded", message = "The promotion failed"}
end
if status.state == "Waiting" then
  return {status = "Progressing", message = "Waiting for another PromotionRun of the application"}
end
local message = "Promoting"
if status.environmentStatus ~= nil then
  for _, s in ipairs(status.environmentStatus) do
    if s.status == "in-progress" then
      message = "Promoting to " .. (s.environmentName or "")
    end
  end
end
return {status = "Progressing", message = message}
