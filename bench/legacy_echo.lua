-- The legacy echo leg: echo(text="hello") as tools/call in a 2025-era MCP session.
-- Run with -t N -c N: every thread owns one connection and opens one session on it, once:
-- initialize (protocolVersion 2025-11-25; the Mcp-Session-Id is read from the reply), then
-- notifications/initialized (must be 202), then tools/call echo with the session's headers for
-- the rest of the run. A call counts when it is answered 200 with the text and no error, as one
-- JSON body or as an SSE stream (both are 2025-era answers). Prints "RESULT ok=<calls> bad=<failed>".
local version = "2025-11-25"
local initialize = '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"' .. version
  .. '","capabilities":{"elicitation":{"form":{}}},"clientInfo":{"name":"bench-legacy-echo","version":"1.0.0"}}}'
local initialized = '{"jsonrpc":"2.0","method":"notifications/initialized"}'
local call = '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}}'

wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Accept"] = "application/json, text/event-stream"
wrk.headers["MCP-Protocol-Version"] = version

local step = "initialize" -- then "initialized", then "call"
local session_headers = nil
ok, bad = 0, 0
local threads = {}

function setup(thread)
  table.insert(threads, thread)
end

function request()
  if step == "initialize" then
    return wrk.format(nil, nil, nil, initialize)
  elseif step == "initialized" then
    return wrk.format(nil, nil, session_headers, initialized)
  end
  return wrk.format(nil, nil, session_headers, call)
end

local function session_of(headers)
  for name, value in pairs(headers) do
    if string.lower(name) == "mcp-session-id" then
      return value
    end
  end
  return nil
end

function response(status, headers, body)
  if step == "initialize" then
    local session = session_of(headers)
    if status == 200 and session then
      session_headers = {}
      for name, value in pairs(wrk.headers) do
        session_headers[name] = value
      end
      session_headers["Mcp-Session-Id"] = session
      step = "initialized"
    else
      bad = bad + 1
    end
  elseif step == "initialized" then
    if status == 202 then step = "call" else bad = bad + 1; step = "initialize" end
  elseif status == 200 and body:find('"result"', 1, true) and body:find('hello', 1, true)
      and not body:find('"isError"%s*:%s*true') then
    ok = ok + 1
  else
    bad = bad + 1
  end
end

function done()
  local o, b = 0, 0
  for _, thread in ipairs(threads) do
    o = o + thread:get("ok")
    b = b + thread:get("bad")
  end
  print("RESULT ok=" .. o .. " bad=" .. b)
end
