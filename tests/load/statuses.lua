-- wrk script: counts answers by status, checks that every 503 carries Retry-After, and
-- prints one JSON line with the counts, the socket errors and the latency percentiles.
-- With `paths` set by `WRK_PATHS` (space-separated), requests go round those paths.
local threads = {}

function setup(thread)
  table.insert(threads, thread)
end

function init(args)
  ok, busy, no_retry, other, other_status = 0, 0, 0, 0, 0
  paths, i = {}, 0
  for p in string.gmatch(os.getenv("WRK_PATHS") or "", "%S+") do
    table.insert(paths, p)
  end
end

function request()
  if #paths == 0 then
    return wrk.format()
  end
  i = i % #paths + 1
  return wrk.format(nil, paths[i])
end

function response(status, headers, body)
  if status == 200 then
    ok = ok + 1
  elseif status == 503 then
    busy = busy + 1
    if headers["Retry-After"] == nil and headers["retry-after"] == nil then
      no_retry = no_retry + 1
    end
  else
    other = other + 1
    other_status = status
  end
end

function done(summary, latency, requests)
  local t = { ok = 0, busy = 0, no_retry = 0, other = 0, other_status = 0 }
  for _, thread in ipairs(threads) do
    for k, _ in pairs(t) do
      local v = thread:get(k)
      if k == "other_status" then
        if v ~= 0 then t[k] = v end
      else
        t[k] = t[k] + v
      end
    end
  end
  local e = summary.errors
  io.write(string.format(
    'WRK {"requests":%d,"seconds":%.3f,"ok":%d,"busy":%d,"busy_without_retry_after":%d,' ..
    '"other":%d,"other_status":%d,"connect_errors":%d,"read_errors":%d,"write_errors":%d,' ..
    '"timeouts":%d,"p50_ms":%.2f,"p99_ms":%.2f,"max_ms":%.2f}\n',
    summary.requests, summary.duration / 1e6, t.ok, t.busy, t.no_retry, t.other,
    t.other_status, e.connect, e.read, e.write, e.timeout,
    latency:percentile(50) / 1000, latency:percentile(99) / 1000, latency.max / 1000))
end
