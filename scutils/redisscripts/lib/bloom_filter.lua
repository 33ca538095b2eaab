-- bloom_filter(bits, meta, rate, capacity) opens a crawl's compact
-- duplicate filter (DUPEFILTER_MODE bloom): a scalable Bloom filter whose
-- layers are ranges of one string of bits (key bits, SETBIT/GETBIT
-- offsets) and whose sizes and counts are the hash meta. A filter made now
-- keeps rate (DUPEFILTER_ERROR_RATE) and capacity (DUPEFILTER_CAPACITY)
-- in meta for good. Layer i (from 1) holds capacity * 2^(i-1) entries at
-- a false-positive rate of rate / 2^i: k_i = ceil(log2(2^i / rate))
-- hashes over m_i = ceil(capacity_i * k_i / ln 2) bits, so a full layer
-- has half its bits set and answers a new entry "seen" with probability
-- 2^-k_i <= rate / 2^i, and all layers together at most rate. A new layer
-- starts when the last is full, unless the string would pass 2^32 bits
-- (Redis's 512 MB): the last layer then takes every entry. A layer's
-- bits are allocated when it starts.
-- The hashes of an entry (a request fingerprint, hex) are h1 + j * h2
-- modulo m_i, j = 0..k_i-1 (double hashing), h1 and h2 two 44-bit parts
-- of its hex (of its SHA1 hex when it is not hex).
-- meta's fields: rate, capacity, layers, and per layer i "<i>:m", "<i>:k",
-- "<i>:n" (entries added), "<i>:set" (bits set: its fill).
-- It returns the filter, whose functions are:
--   seen(fps)   per fingerprint 1 when every layer-i bit of it is set in
--               some layer i, else 0 (one GET per bit: BITFIELD where the
--               server has it, else GETBIT)
--   fp()        the probability that a new entry is answered 1 now,
--               from the layers' fill: 1 - prod_i (1 - (set_i/m_i)^k_i)
--   add(fps)    sets the fingerprints' bits in the last layer (starting
--               layers as they fill), counting entries and bits set
--   save(ttl)   writes meta's counts, both keys expiring in ttl seconds
local function bloom_filter(bits, meta, rate, capacity)
  local h = redis.call('HGETALL', meta)
  local st = {}
  for i = 1, #h, 2 do
    st[h[i]] = h[i + 1]
  end
  local f = {rate = tonumber(st.rate) or tonumber(rate), capacity = tonumber(st.capacity) or tonumber(capacity)}
  local layers, total, changed = {}, 0, {}
  if not st.rate then
    changed.rate, changed.capacity = tostring(f.rate), tostring(f.capacity)
  end
  for i = 1, tonumber(st.layers) or 0 do
    local l = {m = tonumber(st[i .. ':m']), k = tonumber(st[i .. ':k']), n = tonumber(st[i .. ':n']) or 0,
      set = tonumber(st[i .. ':set']) or 0, cap = f.capacity * 2 ^ (i - 1), off = total}
    layers[i] = l
    total = total + l.m
  end

  -- bitfield is whether BITFIELD works (miniredis has none)
  local bitfield
  local function bitop(op, offsets)
    if bitfield == nil then
      local r = redis.pcall('BITFIELD', bits)
      bitfield = type(r) ~= 'table' or not r.err
    end
    local out = {}
    if not bitfield then
      for i, o in ipairs(offsets) do
        if op == 'GET' then
          out[i] = redis.call('GETBIT', bits, o)
        else
          out[i] = redis.call('SETBIT', bits, o, 1)
        end
      end
      return out
    end
    local args = {}
    for i = 1, #offsets, 300 do
      args = {}
      for j = i, math.min(i + 299, #offsets) do
        args[#args + 1] = op
        args[#args + 1] = 'u1'
        args[#args + 1] = offsets[j]
        if op == 'SET' then
          args[#args + 1] = 1
        end
      end
      for _, v in ipairs(redis.call('BITFIELD', bits, unpack(args))) do
        out[#out + 1] = v
      end
    end
    return out
  end

  local function hashes(fp)
    local h1, h2 = tonumber(string.sub(fp, 1, 11), 16), tonumber(string.sub(fp, 12, 22), 16)
    if not h1 or not h2 or #fp < 22 then
      local s = redis.sha1hex(fp)
      h1, h2 = tonumber(string.sub(s, 1, 11), 16), tonumber(string.sub(s, 12, 22), 16)
    end
    return h1, h2 * 2 + 1
  end

  -- offsets appends the bits of an entry with hashes h1, h2 in layer l
  local function offsets(out, l, h1, h2)
    for j = 0, l.k - 1 do
      out[#out + 1] = l.off + math.fmod(h1 + j * h2, l.m)
    end
  end

  local function grow()
    local i = #layers + 1
    local p = f.rate / 2 ^ i
    local k = 1
    while 2 ^ -k > p do
      k = k + 1
    end
    local cap = f.capacity * 2 ^ (i - 1)
    local m = math.ceil(cap * k * 1.4426950408889634)
    if total + m > 4294967295 then
      return false
    end
    layers[i] = {m = m, k = k, n = 0, set = 0, cap = cap, off = total}
    total = total + m
    -- its bits at once: a string grown bit by bit is copied again and
    -- again. Redis gives a string it grows (SETBIT) under 1 MB twice the
    -- room it asks for, and one written whole (SET) the room it holds, so
    -- a small filter is written again whole (its expiry is set by save)
    local bytes = math.ceil(total / 8)
    if bytes <= 1048576 then
      local old = redis.call('GET', bits) or ''
      redis.call('SET', bits, old .. string.rep('\0', bytes - #old))
    else
      redis.call('SETBIT', bits, total - 1, 0)
    end
    changed.layers, changed[i .. ':m'], changed[i .. ':k'] = tostring(i), tostring(m), tostring(k)
    return true
  end

  function f.seen(fps)
    local out, want = {}, {}
    if #layers == 0 then
      for i = 1, #fps do
        out[i] = 0
      end
      return out
    end
    for _, fp in ipairs(fps) do
      local h1, h2 = hashes(fp)
      for _, l in ipairs(layers) do
        offsets(want, l, h1, h2)
      end
    end
    local got = bitop('GET', want)
    local at = 1
    for i = 1, #fps do
      local seen = 0
      for _, l in ipairs(layers) do
        local all = 1
        for j = at, at + l.k - 1 do
          if got[j] == 0 then
            all = 0
            break
          end
        end
        at = at + l.k
        if all == 1 then
          seen = 1
        end
      end
      out[i] = seen
    end
    return out
  end

  function f.fp()
    local none = 1
    for _, l in ipairs(layers) do
      none = none * (1 - (l.set / l.m) ^ l.k)
    end
    return 1 - none
  end

  function f.add(fps)
    local want, of = {}, {}
    for _, fp in ipairs(fps) do
      local l = layers[#layers]
      if (not l or l.n >= l.cap) and grow() then
        l = layers[#layers]
      end
      local h1, h2 = hashes(fp)
      local from = #want
      offsets(want, l, h1, h2)
      for j = from + 1, #want do
        of[j] = l
      end
      l.n = l.n + 1
    end
    local old = bitop('SET', want)
    for j, v in ipairs(old) do
      if v == 0 then
        of[j].set = of[j].set + 1
      end
    end
  end

  function f.save(ttl)
    if #layers == 0 then
      return
    end
    local args = {}
    for k, v in pairs(changed) do
      args[#args + 1] = k
      args[#args + 1] = v
    end
    for i, l in ipairs(layers) do
      local at = #args
      args[at + 1], args[at + 2], args[at + 3], args[at + 4] = i .. ':n', tostring(l.n), i .. ':set', tostring(l.set)
    end
    if #args > 0 then
      redis.call('HSET', meta, unpack(args))
    end
    redis.call('EXPIRE', meta, ttl)
    redis.call('EXPIRE', bits, ttl)
  end

  return f
end
