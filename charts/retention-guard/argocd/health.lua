-- Argo CD health check for retention-guard's kinds (retentionguard.io):
-- ConsumerRetentionPolicy, KafkaConnection and ClusterKafkaConnection.
-- Register it under resource.customizations.health.retentionguard.io_<Kind>
-- in argocd-cm (docs/install.md, "Argo CD and Flux").
--
-- The kinds follow kstatus: Ready is always present once the manager has
-- written a status; Reconciling and Stalled appear only while True.
--   Progressing  no status for this generation yet, or Reconciling=True
--                (the first proof is pending)
--   Degraded     Stalled=True (a person must fix the spec or a Secret), or
--                Ready=False (Violated: the group would lose records or
--                offsets), or Ready=Unknown (the guard cannot prove safety:
--                a Deny policy refuses rollouts of the workloads it guards)
--   Healthy      Ready=True (Proven)
local hs = {}

local function condition(conds, kind)
  if conds == nil then
    return nil
  end
  for _, c in ipairs(conds) do
    if c.type == kind then
      return c
    end
  end
  return nil
end

local function describe(c)
  if c.message ~= nil and c.message ~= "" then
    if c.reason ~= nil and c.reason ~= "" then
      return c.reason .. ": " .. c.message
    end
    return c.message
  end
  return c.reason or ""
end

if obj.status == nil or obj.status.conditions == nil then
  hs.status = "Progressing"
  hs.message = "Waiting for the manager's first status"
  return hs
end

local generation = obj.metadata.generation
local observed = obj.status.observedGeneration
if generation ~= nil and observed ~= nil and observed < generation then
  hs.status = "Progressing"
  hs.message = "Waiting for the manager to observe generation " .. generation
  return hs
end

local stalled = condition(obj.status.conditions, "Stalled")
if stalled ~= nil and stalled.status == "True" then
  hs.status = "Degraded"
  hs.message = describe(stalled)
  return hs
end

local reconciling = condition(obj.status.conditions, "Reconciling")
if reconciling ~= nil and reconciling.status == "True" then
  hs.status = "Progressing"
  hs.message = describe(reconciling)
  return hs
end

local ready = condition(obj.status.conditions, "Ready")
if ready == nil then
  hs.status = "Progressing"
  hs.message = "Waiting for the Ready condition"
  return hs
end
if ready.status == "True" then
  hs.status = "Healthy"
else
  hs.status = "Degraded"
end
hs.message = describe(ready)
return hs
