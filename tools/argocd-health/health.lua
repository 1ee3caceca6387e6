-- The reasons of Synced=False that retrying cannot fix: the spec (or the API key) must change first.
local TERMINAL_REASONS = {
  InvalidSpec = true,
  CloudRejected = true,
  CloudRequestInvalid = true,
  PermissionDenied = true,
  ExternalResourceNotFound = true,
  EndpointNotQueue = true,
  EndpointInOtherAccount = true,
}

-- Phases in which the cloud reports the resource broken.
local BROKEN_PHASES = { FAILED = true, DEGRADED = true }

local function findCondition(status, conditionType)
  if status.conditions == nil then
    return nil
  end
  for _, condition in ipairs(status.conditions) do
    if condition.type == conditionType then
      return condition
    end
  end
  return nil
end

-- "Reason: message", or the reason alone. Argo CD opens no string library for these scripts: only
-- concatenation is at hand.
local function describe(condition)
  if condition.message == nil or condition.message == "" then
    return condition.reason
  end
  return condition.reason .. ": " .. condition.message
end

-- Whether a condition was set for an older spec than the current one.
local function isStale(condition, generation)
  return condition.observedGeneration ~= nil and condition.observedGeneration < generation
end

local function health()
  if obj.metadata.deletionTimestamp ~= nil then
    return "Progressing", "Waiting for the operator to delete the cloud resource"
  end
  local status = obj.status
  if status == nil then
    return "Progressing", "Waiting for the operator to pick up the resource"
  end
  local generation = obj.metadata.generation or 0
  if status.observedGeneration == nil or status.observedGeneration < generation then
    return "Progressing", "Waiting for the operator to act on generation " .. generation
  end

  -- A task finishes as a Job does: for good, whatever the other conditions say.
  local failed = findCondition(status, "Failed")
  if failed ~= nil and failed.status == "True" then
    return "Degraded", describe(failed)
  end
  local complete = findCondition(status, "Complete")
  if complete ~= nil and complete.status == "True" then
    return "Healthy", describe(complete)
  end

  local synced = findCondition(status, "Synced")
  if synced ~= nil and synced.status == "False" and TERMINAL_REASONS[synced.reason] then
    return "Degraded", describe(synced)
  end
  local ready = findCondition(status, "Ready")
  if status.phase ~= nil and BROKEN_PHASES[status.phase] then
    if ready ~= nil and ready.status == "False" then
      return "Degraded", describe(ready)
    end
    return "Degraded", "The cloud reports the resource " .. status.phase
  end
  -- Paused by the operator (idle, a deadline, a budget): the spec is untouched, so Git stays in sync.
  if status.pausedBy ~= nil and status.pausedBy.reason ~= nil then
    return "Suspended", "Paused by the operator (" .. status.pausedBy.reason .. "): "
      .. (status.pausedBy.message or "")
  end
  if suspension ~= nil and obj.spec ~= nil and obj.spec[suspension.field] == true
      and status.phase == suspension.phase then
    return "Suspended", suspension.message
  end

  if ready ~= nil and ready.status == "True" and not isStale(ready, generation) then
    return "Healthy", describe(ready)
  end
  if synced ~= nil and synced.status == "False" then
    return "Progressing", "Retrying after " .. describe(synced)
  end
  if ready ~= nil and not isStale(ready, generation) then
    return "Progressing", describe(ready)
  end
  return "Progressing", "Waiting for the cloud resource to match generation " .. generation
end

local hs = {}
hs.status, hs.message = health()
return hs
