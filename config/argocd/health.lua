-- Argo CD health check for Picchu's Revisions and ReleaseManagers
-- (resource.customizations.health.picchu.medium.engineering_Revision and
-- _ReleaseManager in argocd-cm; see docs/gitops.md). It reads the kstatus
-- conditions Picchu writes:
--   Stalled True      -> Degraded    (a Revision: the build failed; the message says why)
--   Reconciling True  -> Progressing (where each target is, e.g. "production: releasing 40%")
--   Ready True        -> Healthy     (released, or settled where it stays)
--   anything else     -> Progressing (Picchu has not reported on this generation yet)
-- Argo CD runs custom health checks without Lua's string library: this
-- script uses only the base library.
local hs = {}
local kind = obj.kind or "object"

local function find(conditions, type)
  for _, c in ipairs(conditions) do
    if c.type == type then
      return c
    end
  end
  return nil
end

local function message(c, default)
  if c.message ~= nil and c.message ~= "" then
    return c.message
  end
  if c.reason ~= nil and c.reason ~= "" then
    return c.reason
  end
  return default
end

if obj.status == nil or obj.status.conditions == nil then
  hs.status = "Progressing"
  hs.message = "Waiting for Picchu to report on this " .. kind
  return hs
end

local generation = obj.metadata.generation
local conditions = obj.status.conditions

-- Stalled is read first: Picchu also sets it, for the generation it names,
-- on an object it cannot act on at all (a value it cannot decode).
local stalled = find(conditions, "Stalled")
if stalled ~= nil and stalled.status == "True" and
    (generation == nil or stalled.observedGeneration == nil or stalled.observedGeneration >= generation) then
  hs.status = "Degraded"
  hs.message = message(stalled, "Stalled")
  return hs
end

if generation ~= nil and (obj.status.observedGeneration == nil or obj.status.observedGeneration < generation) then
  hs.status = "Progressing"
  hs.message = "Waiting for Picchu to act on generation " .. tostring(generation) .. " of this " .. kind
  return hs
end

local reconciling = find(conditions, "Reconciling")
if reconciling ~= nil and reconciling.status == "True" then
  hs.status = "Progressing"
  hs.message = message(reconciling, "Reconciling")
  return hs
end

local ready = find(conditions, "Ready")
if ready ~= nil and ready.status == "True" then
  hs.status = "Healthy"
  hs.message = message(ready, "Ready")
  return hs
end

hs.status = "Progressing"
if ready ~= nil then
  hs.message = message(ready, "Not ready")
else
  hs.message = "Waiting for Picchu to report on this " .. kind
end
return hs
