-- lease_record(v) returns a lease record's queue, score and member
-- (throttle.ParseRecord in Lua): "<length of queue>:<queue><score>\n<member>"
-- as pops write it, or the JSON object {"q", "s", "m"} of earlier versions.
local function lease_record(v)
  if string.sub(v, 1, 1) == '{' then
    local d = cjson.decode(v)
    return d.q, d.s, d.m
  end
  local colon = string.find(v, ':', 1, true)
  local n = tonumber(string.sub(v, 1, colon - 1))
  local rest = colon + n + 1
  local nl = string.find(v, '\n', rest, true)
  return string.sub(v, colon + 1, colon + n), string.sub(v, rest, nl - 1), string.sub(v, nl + 1)
end
