-- Exactly FLOWS pairs of echo(text="hello") calls per wrk thread, then the thread stops: the
-- memory runs' load for servers without confirm (the rig's floors). A pair is two requests, as
-- a two-round MRTR flow is, so that the checkpoints count the same number of requests.
-- Prints "FLOWS ok=<completed pairs> bad=<failed calls>" like flows.lua.
local quota = tonumber(os.getenv("FLOWS") or "1000")

wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Accept"] = "application/json, text/event-stream"
wrk.headers["MCP-Protocol-Version"] = "2026-07-28"
wrk.headers["Mcp-Method"] = "tools/call"
wrk.headers["Mcp-Name"] = "echo"
wrk.body = '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"},'
  .. '"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",'
  .. '"io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}}}'

completed, failed = 0, 0
local first_of_pair_done = false
local all = {}

function setup(thread)
  table.insert(all, thread)
end

function response(status, headers, body)
  if status == 200 and body:find('"resultType"%s*:%s*"complete"') and body:find('hello', 1, true) then
    if first_of_pair_done then
      completed = completed + 1
    end
    first_of_pair_done = not first_of_pair_done
  else
    failed = failed + 1
    first_of_pair_done = false
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
