-- Exactly FLOWS two-round MRTR flows per wrk thread, then the thread stops (memory runs).
-- Each flow: tools/call confirm(item="book") must answer input_required; the retry answers the
-- first input request with an accepting {"ok": true} and must complete. Run with -t N -c N so
-- that every thread owns one connection; wrk still waits for -d, so keep -d a little above the
-- expected time. Prints "FLOWS ok=<completed> bad=<failed>" at the end.
local quota = tonumber(os.getenv("FLOWS") or "1000")
local meta = '"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",'
  .. '"io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}'
local call = '{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"confirm",'
  .. '"arguments":{"item":"book"},%s' .. meta .. '}}'

wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Accept"] = "application/json, text/event-stream"
wrk.headers["MCP-Protocol-Version"] = "2026-07-28"
wrk.headers["Mcp-Method"] = "tools/call"
wrk.headers["Mcp-Name"] = "confirm"

local pending = nil -- {key, state} between the two rounds of a flow
completed, failed = 0, 0
local all = {}

function setup(thread)
  table.insert(all, thread)
end

function request()
  if pending == nil then
    return wrk.format(nil, nil, nil, string.format(call, 1, ""))
  end
  local answer = string.format('"inputResponses":{"%s":{"action":"accept","content":{"ok":true}}},'
    .. '"requestState":"%s",', pending.key, pending.state)
  return wrk.format(nil, nil, nil, string.format(call, 2, answer))
end

function response(status, headers, body)
  if pending == nil then
    local key = body:match('"inputRequests"%s*:%s*{%s*"([^"]+)"')
    local state = body:match('"requestState"%s*:%s*"([^"]+)"')
    if status == 200 and key and state then
      pending = {key = key, state = state}
      return
    end
    failed = failed + 1
  else
    pending = nil
    if status == 200 and body:find('"resultType"%s*:%s*"complete"') then
      completed = completed + 1
    else
      failed = failed + 1
    end
  end
  if completed + failed >= quota then
    wrk.thread:stop()
  end
end

function done()
  local ok, bad = 0, 0
  for _, thread in ipairs(all) do
    ok = ok + thread:get("completed")
    bad = bad + thread:get("failed")
  end
  print("FLOWS ok=" .. ok .. " bad=" .. bad)
end
