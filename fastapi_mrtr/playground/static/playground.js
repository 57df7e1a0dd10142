// The fastapi-mrtr playground: an MCP 2026-07-28 client in the browser (docs/playground.md).
//
// Safety rule of this file: every string that comes from the server (names, titles, descriptions,
// schemas, messages, results) reaches the page through textContent, attribute values or DOM
// properties, never through markup. There is no innerHTML, outerHTML, insertAdjacentHTML,
// document.write or eval here (tests/playground checks), and the page's CSP allows no inline script.
"use strict";

(() => {
  const PROTOCOL = "2026-07-28";
  const ENDPOINT = (document.documentElement.dataset.endpoint || "") || "/";
  const CLIENT_INFO = { name: "fastapi-mrtr-playground", version: "1.0.0" };
  // What a full 2026-07-28 client declares: both elicitation modes, sampling and roots.
  const CAPABILITIES = { elicitation: { form: {}, url: {} }, sampling: {}, roots: {} };
  const MAX_ROUNDS = 20; // a client sets its own cap; the official SDKs stop at 10 retries
  const NAMED = { "tools/call": "name", "prompts/get": "name", "resources/read": "uri", "tasks/get": "taskId", "tasks/update": "taskId", "tasks/cancel": "taskId" };
  const M = "io.modelcontextprotocol/";
  // The tasks extension (SEP-2663), declared on tools/call (a long call may become a task) and tasks/*.
  const TASKS = `${M}tasks`;
  const TASK_POLL = { fallback: 1000, min: 100, max: 30000 }; // ms: the server's pollIntervalMs, bounded
  const REFUSED = "fastapi-mrtr/refused-answer"; // _meta of a question asked again: why its answer was refused

  let authorization = "";
  let nextId = 1;
  let capabilities = {};
  let kind = "tools";
  let selected = null;
  let conversationToken = 0; // a newer conversation makes an older one stop at its next step
  const lists = { tools: null, prompts: null, resources: null };

  // --- DOM helpers ----------------------------------------------------------------------------

  let uid = 0;
  const newId = (prefix) => `${prefix}-${++uid}`;
  const $ = (id) => document.getElementById(id);

  // The one way this page makes elements: string children become text nodes, never markup.
  function h(tag, attrs, ...children) {
    const el = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === undefined || value === null || value === false) continue;
      if (key === "class") el.className = value;
      else if (key === "text") el.textContent = String(value);
      else if (key.startsWith("on")) el.addEventListener(key.slice(2), value);
      else if (["checked", "value", "disabled", "multiple"].includes(key)) el[key] = value;
      else el.setAttribute(key, value === true ? "" : String(value));
    }
    for (const child of children.flat(Infinity)) {
      if (child === undefined || child === null || child === false) continue;
      el.append(child instanceof Node ? child : String(child));
    }
    return el;
  }

  // Appends, skipping absent children (DOM append would write "null" as text).
  const put = (el, ...children) => el.append(...children.flat(Infinity).filter((c) => c !== undefined && c !== null && c !== false));
  const pretty = (value) => JSON.stringify(value, null, 2);
  const bytes = (text) => new TextEncoder().encode(text).length;
  const isObject = (v) => v !== null && typeof v === "object" && !Array.isArray(v);

  function safeHttpUrl(text) {
    try {
      const url = new URL(String(text), location.href);
      return url.protocol === "http:" || url.protocol === "https:" ? url.href : null;
    } catch {
      return null;
    }
  }

  // data: URLs only for base64 of a media type of the expected kind.
  function dataUrl(mime, data, kindPrefix) {
    const type = String(mime || "");
    if (!new RegExp(`^${kindPrefix}/[A-Za-z0-9.+-]+$`).test(type)) return null;
    if (typeof data !== "string" || !/^[A-Za-z0-9+/]*={0,2}$/.test(data)) return null;
    return `data:${type};base64,${data}`;
  }

  // --- the wire --------------------------------------------------------------------------------

  // The header codec of SEP-2243: plain visible ASCII as it is, anything else as =?base64?...?=.
  function headerValue(value) {
    const text = String(value);
    const wrapped = text.length >= 11 && text.slice(0, 9).toLowerCase() === "=?base64?" && text.endsWith("?=");
    if (/^[\x20-\x7e]*$/.test(text) && text === text.replace(/^[ \t]+|[ \t]+$/g, "") && !wrapped) return text;
    let binary = "";
    for (const b of new TextEncoder().encode(text)) binary += String.fromCharCode(b);
    return `=?base64?${btoa(binary)}?=`;
  }

  // Arguments whose schema property says "x-mcp-header" are mirrored into Mcp-Param-* headers.
  function paramHeaderDecls(schema, path = [], found = []) {
    if (!isObject(schema) || !isObject(schema.properties)) return found;
    for (const [key, sub] of Object.entries(schema.properties)) {
      if (isObject(sub) && typeof sub["x-mcp-header"] === "string") found.push({ path: [...path, key], name: sub["x-mcp-header"] });
      paramHeaderDecls(sub, [...path, key], found);
    }
    return found;
  }

  function paramHeaders(decls, args) {
    const headers = {};
    for (const decl of decls) {
      let value = args;
      for (const key of decl.path) value = isObject(value) ? value[key] : undefined;
      if (value === undefined || value === null) continue;
      headers[`Mcp-Param-${decl.name}`] = headerValue(typeof value === "boolean" ? String(value) : String(value));
    }
    return headers;
  }

  function meta(extra, method) {
    const caps = method === "tools/call" || method.startsWith("tasks/") ? { ...CAPABILITIES, extensions: { [TASKS]: {} } } : CAPABILITIES;
    return {
      [`${M}protocolVersion`]: PROTOCOL,
      [`${M}clientCapabilities`]: caps,
      [`${M}clientInfo`]: CLIENT_INFO,
      ...extra,
    };
  }

  // One JSON-RPC request, answered as JSON or as an SSE stream (notifications, then the answer).
  async function post(method, params, { extraHeaders = {}, metaExtra = {}, onNotify = () => {} } = {}) {
    const id = nextId++;
    const message = { jsonrpc: "2.0", id, method, params: { ...params, _meta: meta(metaExtra, method) } };
    const body = JSON.stringify(message);
    const headers = {
      "Content-Type": "application/json",
      Accept: "application/json, text/event-stream",
      "MCP-Protocol-Version": PROTOCOL,
      "Mcp-Method": method,
    };
    const nameKey = NAMED[method];
    if (nameKey && typeof params[nameKey] === "string") headers["Mcp-Name"] = headerValue(params[nameKey]);
    Object.assign(headers, extraHeaders);
    if (authorization) headers.Authorization = authorization;
    const exchange = { id, method, body, headers, status: 0, raw: "", answer: null, failure: null, sse: false };
    try {
      const response = await fetch(ENDPOINT, { method: "POST", headers, body, cache: "no-store", credentials: "same-origin" });
      exchange.status = response.status;
      if (response.status === 401 || response.status === 403) offerSignIn(response.status, response.headers.get("www-authenticate"));
      if ((response.headers.get("content-type") || "").includes("text/event-stream")) {
        exchange.sse = true;
        await readStream(response, exchange, onNotify);
      } else {
        exchange.raw = await response.text();
        try {
          exchange.answer = exchange.raw ? JSON.parse(exchange.raw) : null;
        } catch {
          exchange.failure = "The response is not JSON";
        }
      }
    } catch (error) {
      exchange.failure = `Network error: ${error && error.message ? error.message : error}`;
    }
    if (!exchange.failure && !isObject(exchange.answer)) exchange.failure = `HTTP ${exchange.status} with no JSON-RPC answer`;
    return exchange;
  }

  async function readStream(response, exchange, onNotify) {
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    const take = (event) => {
      const data = event.split("\n").filter((l) => l.startsWith("data:")).map((l) => l.slice(5).replace(/^ /, "")).join("\n");
      if (!data) return;
      let msg;
      try {
        msg = JSON.parse(data);
      } catch {
        return;
      }
      if (isObject(msg) && typeof msg.method === "string" && !("result" in msg) && !("error" in msg)) onNotify(msg);
      else exchange.answer = msg;
    };
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      const chunk = decoder.decode(value, { stream: true });
      exchange.raw += chunk;
      buffer = (buffer + chunk).replace(/\r\n/g, "\n");
      let end;
      while ((end = buffer.indexOf("\n\n")) >= 0) {
        take(buffer.slice(0, end));
        buffer = buffer.slice(end + 2);
      }
    }
    if (buffer.trim()) take(buffer);
  }

  function curl(exchange) {
    const quote = (s) => `'${String(s).replace(/'/g, "'\\''")}'`;
    const url = new URL(ENDPOINT, location.href).href;
    const parts = [`curl -sS -N ${quote(url)}`];
    for (const [name, value] of Object.entries(exchange.headers)) parts.push(`-H ${quote(`${name}: ${value}`)}`);
    parts.push(`--data-raw ${quote(exchange.body)}`);
    return parts.join(" \\\n  ");
  }

  async function listAll(method, field) {
    const all = [];
    let cursor;
    for (let page = 0; page < 50; page++) {
      const exchange = await post(method, cursor ? { cursor } : {});
      const answer = exchange.answer;
      if (exchange.failure || answer.error) throw new Error(exchange.failure || `${answer.error.code}: ${answer.error.message}`);
      all.push(...(answer.result[field] || []));
      cursor = answer.result.nextCursor;
      if (!cursor) break;
    }
    return all;
  }

  // --- forms from JSON Schema -----------------------------------------------------------------

  class FieldError extends Error {
    constructor(message, input) {
      super(message);
      this.input = input;
    }
  }

  // $ref into $defs/definitions, "X | None" (anyOf with a null branch) and a lone allOf, resolved.
  function resolve(schema, root, seen = 0) {
    let s = isObject(schema) ? schema : {};
    if (seen > 32) return {};
    if (typeof s.$ref === "string") {
      const match = /^#\/(\$defs|definitions)\/(.+)$/.exec(s.$ref);
      const name = match ? decodeURIComponent(match[2]).replace(/~1/g, "/").replace(/~0/g, "~") : null;
      const target = match && isObject(root[match[1]]) ? root[match[1]][name] : null;
      const { $ref, ...rest } = s;
      s = target ? { ...resolve(target, root, seen + 1), ...rest } : rest;
    }
    for (const key of ["anyOf", "oneOf"]) {
      if (!Array.isArray(s[key])) continue;
      const other = s[key].filter((b) => !(isObject(b) && b.type === "null"));
      if (other.length === 1 && other.length < s[key].length) {
        const { [key]: _, ...rest } = s;
        s = { ...resolve(other[0], root, seen + 1), ...rest, nullable: true };
      }
    }
    if (Array.isArray(s.allOf) && s.allOf.length === 1 && !s.type && !s.properties) {
      const { allOf, ...rest } = s;
      s = { ...resolve(allOf[0], root, seen + 1), ...rest };
    }
    if (Array.isArray(s.type)) {
      const types = s.type.filter((t) => t !== "null");
      s = { ...s, type: types.length === 1 ? types[0] : undefined, nullable: types.length < s.type.length };
    }
    return s;
  }

  // Choices of an enum: plain enum (with legacy enumNames), or oneOf/anyOf of {const, title}.
  function choices(s) {
    if (Array.isArray(s.enum)) return s.enum.map((v, i) => ({ value: v, title: Array.isArray(s.enumNames) && s.enumNames[i] != null ? String(s.enumNames[i]) : String(v) }));
    for (const key of ["oneOf", "anyOf"]) {
      if (Array.isArray(s[key]) && s[key].length && s[key].every((b) => isObject(b) && "const" in b)) {
        return s[key].map((b) => ({ value: b.const, title: b.title != null ? String(b.title) : String(b.const) }));
      }
    }
    return null;
  }

  function labelFor(opts, s, inputId) {
    const text = s.title != null ? String(s.title) : opts.name;
    return h("label", { for: inputId }, text, opts.required ? h("span", { class: "req", "aria-hidden": "true", title: "required" }, " *") : null);
  }

  function help(s, id) {
    return s.description != null ? h("span", { class: "help", id }, String(s.description)) : null;
  }

  // A field for one schema: { el, read(strict) } where read gives undefined for "no value".
  function buildField(schema, opts) {
    const s = resolve(schema, opts.root);
    const initial = opts.value !== undefined ? opts.value : s.default;
    const id = newId("f");
    const helpId = `${id}-help`;
    const described = s.description != null ? helpId : undefined;
    const label = s.title != null ? String(s.title) : opts.name;
    const options = choices(s);

    if (options) {
      const select = h("select", { id, "aria-describedby": described, "aria-required": opts.required ? "true" : undefined, "data-name": opts.name },
        h("option", { value: "" }, "(not set)"),
        options.map((o, i) => h("option", { value: String(i) }, o.title)));
      const at = options.findIndex((o) => JSON.stringify(o.value) === JSON.stringify(initial));
      if (at >= 0) select.value = String(at);
      else if (opts.required && options.length === 1) select.value = "0";
      return {
        el: h("div", { class: "field" }, labelFor(opts, s, id), help(s, helpId), select),
        read: () => (select.value === "" ? undefined : options[Number(select.value)].value),
        input: select,
      };
    }

    const type = s.type || (s.properties ? "object" : s.items ? "array" : undefined);

    if (type === "array") {
      const itemSchema = resolve(s.items || {}, opts.root);
      const itemChoices = choices(itemSchema);
      const chosen = Array.isArray(initial) ? initial : [];
      if (itemChoices) {
        const boxes = itemChoices.map((o) => {
          const boxId = newId("c");
          const box = h("input", { type: "checkbox", id: boxId, checked: chosen.some((v) => JSON.stringify(v) === JSON.stringify(o.value)) });
          return { box, value: o.value, el: h("label", { class: "check", for: boxId }, box, " ", o.title) };
        });
        const group = h("fieldset", { "aria-describedby": described, "data-name": opts.name },
          h("legend", {}, label, opts.required ? h("span", { class: "req", "aria-hidden": "true" }, " *") : null), help(s, helpId), boxes.map((b) => b.el));
        return { el: h("div", { class: "field" }, group), read: () => boxes.filter((b) => b.box.checked).map((b) => b.value), input: boxes[0] && boxes[0].box };
      }
      const rows = [];
      const list = h("ol", { class: "array-items" });
      const addRow = (value) => {
        const item = buildField(s.items || {}, { name: `${label} item ${rows.length + 1}`, root: opts.root, value, required: true });
        const row = { item, li: null };
        const remove = h("button", { type: "button", "aria-label": `Remove ${label} item`, onclick: () => { rows.splice(rows.indexOf(row), 1); row.li.remove(); } }, "Remove");
        row.li = h("li", {}, item.el, remove);
        rows.push(row);
        list.append(row.li);
        return item;
      };
      chosen.forEach((v) => addRow(v));
      const add = h("button", { type: "button", onclick: () => { const item = addRow(undefined); if (item.input) item.input.focus(); } }, `Add ${label} item`);
      const group = h("fieldset", { "aria-describedby": described, "data-name": opts.name },
        h("legend", {}, label, opts.required ? h("span", { class: "req", "aria-hidden": "true" }, " *") : null), help(s, helpId), list, add);
      return {
        el: h("div", { class: "field" }, group),
        read: (strict) => {
          const values = rows.map((r) => r.item.read(strict)).filter((v) => v !== undefined);
          return values.length || opts.required || rows.length ? values : undefined;
        },
        input: add,
      };
    }

    if (type === "object" && isObject(s.properties)) {
      const required = new Set(Array.isArray(s.required) ? s.required : []);
      const start = isObject(initial) ? initial : {};
      const children = Object.entries(s.properties).map(([name, sub]) => ({
        name,
        field: buildField(sub, { name, root: opts.root, value: start[name], required: required.has(name) }),
      }));
      const body = children.map((c) => c.field.el);
      const el = opts.top ? h("div", { class: "fields" }, body) : h("div", { class: "field" },
        h("fieldset", { "aria-describedby": described, "data-name": opts.name }, h("legend", {}, label, opts.required ? h("span", { class: "req", "aria-hidden": "true" }, " *") : null), help(s, helpId), body));
      return {
        el,
        read: (strict) => {
          const out = {};
          for (const c of children) {
            let value;
            try {
              value = c.field.read(strict);
            } catch (error) {
              if (strict) throw error;
            }
            if (value === undefined) {
              if (strict && required.has(c.name)) throw new FieldError(`${resolve(s.properties[c.name], opts.root).title || c.name} is required`, c.field.input);
              continue;
            }
            out[c.name] = value;
          }
          return Object.keys(out).length || opts.required || opts.top ? out : undefined;
        },
        input: children[0] && children[0].field.input,
      };
    }

    if (type === "boolean") {
      if (opts.required || typeof initial === "boolean") {
        const box = h("input", { type: "checkbox", id, checked: initial === true, "aria-describedby": described, "data-name": opts.name });
        return { el: h("div", { class: "field" }, h("label", { for: id, class: "check" }, box, " ", label, opts.required ? h("span", { class: "req", "aria-hidden": "true" }, " *") : null), help(s, helpId)), read: () => box.checked, input: box };
      }
      const select = h("select", { id, "aria-describedby": described, "data-name": opts.name }, h("option", { value: "" }, "(not set)"), h("option", { value: "true" }, "true"), h("option", { value: "false" }, "false"));
      return { el: h("div", { class: "field" }, labelFor(opts, s, id), help(s, helpId), select), read: () => (select.value === "" ? undefined : select.value === "true"), input: select };
    }

    if (type === "integer" || type === "number") {
      const input = h("input", {
        type: "number", id, step: type === "integer" ? "1" : "any", min: s.minimum, max: s.maximum,
        value: typeof initial === "number" ? String(initial) : "", "aria-describedby": described, "aria-required": opts.required ? "true" : undefined, "data-name": opts.name,
      });
      return {
        el: h("div", { class: "field" }, labelFor(opts, s, id), help(s, helpId), input),
        read: (strict) => {
          if (input.value.trim() === "") return undefined;
          const n = Number(input.value);
          if (!Number.isFinite(n) || (type === "integer" && !Number.isInteger(n))) {
            if (strict) throw new FieldError(`${label} must be ${type === "integer" ? "a whole number" : "a number"}`, input);
            return undefined;
          }
          return n;
        },
        input,
      };
    }

    if (type === "string") {
      const inputType = { email: "email", uri: "url", date: "date" }[s.format] || "text";
      const long = typeof s.maxLength === "number" && s.maxLength > 200;
      const input = long
        ? h("textarea", { id, rows: 3, maxlength: s.maxLength, "aria-describedby": described, "aria-required": opts.required ? "true" : undefined, "data-name": opts.name })
        : h("input", { type: inputType, id, minlength: s.minLength, maxlength: s.maxLength, autocomplete: "off", "aria-describedby": described, "aria-required": opts.required ? "true" : undefined, "data-name": opts.name });
      input.value = typeof initial === "string" ? initial : "";
      return { el: h("div", { class: "field" }, labelFor(opts, s, id), help(s, helpId), input), read: () => (input.value === "" ? undefined : input.value), input };
    }

    // Anything the form cannot draw (a free-form object, a union): JSON typed in by hand.
    const area = h("textarea", { id, class: "json", rows: 3, "aria-describedby": described, "data-name": opts.name, spellcheck: "false" });
    area.value = initial !== undefined ? pretty(initial) : "";
    return {
      el: h("div", { class: "field" }, labelFor(opts, s, id), h("span", { class: "help" }, "JSON value"), help(s, helpId), area),
      read: (strict) => {
        if (area.value.trim() === "") return undefined;
        try {
          return JSON.parse(area.value);
        } catch {
          if (strict) throw new FieldError(`${label} is not valid JSON`, area);
          return undefined;
        }
      },
      input: area,
    };
  }

  // A form for an object schema, with the raw-JSON toggle. read() throws FieldError when invalid.
  function schemaForm(schema, { allowRaw = true, values } = {}) {
    const root = isObject(schema) ? schema : { type: "object" };
    const holder = h("div", { class: "form-fields" });
    const errors = h("p", { class: "error", role: "alert" });
    let field = null;
    let raw = null;
    const draw = (value) => {
      field = buildField({ type: "object", properties: {}, ...root }, { name: "arguments", root, value, required: true, top: true });
      holder.replaceChildren(field.el);
      if (!Object.keys(root.properties || {}).length) holder.append(h("p", { class: "muted" }, "No arguments."));
    };
    draw(values);
    const toggleId = newId("raw");
    const toggle = h("input", { type: "checkbox", id: toggleId, onchange: () => {
      errors.textContent = "";
      if (toggle.checked) {
        raw = h("textarea", { class: "json", "aria-label": "Arguments as JSON", spellcheck: "false", id: newId("json") });
        raw.value = pretty(field.read(false) || {});
        holder.replaceChildren(raw);
        raw.focus();
      } else {
        let value;
        try {
          value = JSON.parse(raw.value || "{}");
        } catch {
          errors.textContent = "The JSON does not parse; fix it before going back to the form.";
          toggle.checked = true;
          return;
        }
        raw = null;
        draw(value);
      }
    } });
    const el = h("div", {}, holder, allowRaw ? h("p", {}, h("label", { for: toggleId, class: "check" }, toggle, " Raw JSON")) : null, errors);
    return {
      el,
      read() {
        errors.textContent = "";
        document.querySelectorAll(".invalid").forEach((n) => n.classList.remove("invalid"));
        try {
          if (raw) {
            const value = JSON.parse(raw.value || "{}");
            if (!isObject(value)) throw new FieldError("The JSON must be an object", raw);
            return value;
          }
          return field.read(true);
        } catch (error) {
          const input = error instanceof FieldError ? error.input : raw;
          errors.textContent = error instanceof SyntaxError ? "The JSON does not parse." : error.message;
          if (input) {
            input.classList.add("invalid");
            input.setAttribute("aria-invalid", "true");
            input.focus();
          }
          return undefined;
        }
      },
    };
  }

  // --- the conversation, round by round ---------------------------------------------------------

  function conversationView(titleText) {
    const root = $("conversation");
    const progress = h("progress", { max: 1, "aria-label": "Progress", hidden: true });
    const progressText = h("span", { class: "muted", role: "status" });
    const logs = h("ul", { class: "logs", "aria-label": "Log messages" });
    const timeline = h("ol", { class: "timeline", "aria-label": "Rounds" });
    const asks = h("div", { class: "asks" });
    const result = h("div", { class: "result-holder" });
    // Progress and log messages get a card only once one arrives: an empty card says nothing.
    const activity = h("div", { class: "card activity", hidden: true }, h("div", { class: "progress" }, progress, " ", progressText), logs);
    root.replaceChildren(h("h2", { class: "conversation-title" }, titleText), activity, asks, result, h("h3", {}, "Timeline"), timeline);
    return { progress, progressText, logs, timeline, asks, result, activity };
  }

  function onNotify(view) {
    return (msg) => {
      const p = isObject(msg.params) ? msg.params : {};
      view.activity.hidden = false;
      if (msg.method === "notifications/progress") {
        view.progress.hidden = false;
        if (typeof p.total === "number" && p.total > 0) {
          view.progress.max = p.total;
          view.progress.value = Number(p.progress) || 0;
        } else view.progress.removeAttribute("value");
        view.progressText.textContent = `${p.progress}${p.total != null ? ` / ${p.total}` : ""}${p.message != null ? ` ${p.message}` : ""}`;
      } else if (msg.method === "notifications/message") {
        const data = typeof p.data === "string" ? p.data : JSON.stringify(p.data);
        view.logs.append(h("li", {}, `[${p.level}] ${p.logger ? `${p.logger}: ` : ""}${data}`));
      } else {
        view.logs.append(h("li", {}, `${msg.method} ${JSON.stringify(p)}`));
      }
    };
  }

  function roundCard(view, round, exchange) {
    const answer = exchange.answer;
    const result = isObject(answer) && isObject(answer.result) ? answer.result : null;
    const taskStatus = result && exchange.method !== "tools/call" && typeof result.status === "string" ? `task ${result.status}` : "";
    let status = exchange.failure || (answer.error ? `error ${answer.error.code}` : taskStatus || result.resultType || "complete");
    const li = h("li", { class: `card round ${result && result.resultType !== "input_required" ? "complete" : result ? "" : "failed"}`, "data-round": round });
    const asked = result && isObject(result.inputRequests) ? Object.entries(result.inputRequests).map(([k, v]) => `${k} (${isObject(v) ? v.method : "?"})`) : [];
    const sent = exchange.sentKeys || [];
    const curlText = curl(exchange);
    const curlPre = h("pre", { class: "curl", hidden: true }, curlText);
    const copied = h("span", { class: "muted", role: "status" });
    li.append(
      h("h3", {}, `Round ${round}: ${exchange.method}, HTTP ${exchange.status || "-"}, ${status}`),
      h("p", { class: "facts" },
        `request ${bytes(exchange.body)} B, response ${bytes(exchange.raw)} B${exchange.sse ? " (SSE)" : ""}`,
        result && typeof result.requestState === "string" ? `, requestState ${result.requestState.length} chars` : "",
        sent.length ? `; answered: ${sent.join(", ")}` : "",
        asked.length ? `; asks: ${asked.join(", ")}` : ""),
      h("details", {}, h("summary", {}, "Request"), h("pre", { class: "raw-request" }, Object.entries(exchange.headers).map(([k, v]) => `${k}: ${v}`).join("\n") + "\n\n" + pretty(JSON.parse(exchange.body)))),
      h("details", {}, h("summary", {}, "Response"), h("pre", { class: "raw-response" }, exchange.raw)),
      h("div", { class: "actions" }, h("button", { type: "button", class: "copy-curl", onclick: async () => {
        curlPre.hidden = false;
        try {
          await navigator.clipboard.writeText(curlText);
          copied.textContent = "copied";
        } catch {
          copied.textContent = "select the command below to copy it";
        }
      } }, "Copy as curl"), copied),
      curlPre,
    );
    view.timeline.append(li);
  }

  // Runs one request to completion: each input_required round is shown, answered and retried.
  async function converse(method, params, title, render, extraHeaders = {}) {
    const token = ++conversationToken;
    const view = conversationView(title);
    const level = $("log-level") ? $("log-level").value : "";
    let inputResponses;
    let requestState;
    let asked = {}; // the previous round's input requests, to see a question asked again
    for (let round = 1; ; round++) {
      const retry = { ...params };
      if (inputResponses) retry.inputResponses = inputResponses;
      if (requestState !== undefined) retry.requestState = requestState; // echoed exactly as received
      const metaExtra = { progressToken: `playground-${nextId}` };
      if (level) metaExtra[`${M}logLevel`] = level;
      const exchange = await post(method, retry, { extraHeaders, metaExtra, onNotify: onNotify(view) });
      exchange.sentKeys = inputResponses ? Object.keys(inputResponses) : [];
      if (token !== conversationToken) return;
      roundCard(view, round, exchange);
      if (exchange.failure) return showError(view, exchange.failure);
      const answer = exchange.answer;
      if (answer.error) return showError(view, `JSON-RPC error ${answer.error.code}: ${answer.error.message}`, answer.error.data);
      const result = answer.result;
      if (!isObject(result)) return showError(view, "The answer has no result");
      if (result.resultType === "task") return followTask(view, result, token, render, round);
      if (result.resultType !== "input_required") return render(view, result);
      if (round >= MAX_ROUNDS) return showError(view, `Stopped after ${MAX_ROUNDS} rounds`);
      requestState = typeof result.requestState === "string" ? result.requestState : undefined;
      const requests = isObject(result.inputRequests) ? result.inputRequests : {};
      const refused = refusals(requests, asked, inputResponses);
      asked = requests;
      inputResponses = Object.keys(requests).length ? await answerAll(view, requests, round, refused) : undefined;
      if (token !== conversationToken) return;
      if (inputResponses === null) return showError(view, "Flow stopped: no retry sent");
    }
  }

  // A call the server turned into a task: poll tasks/get at its pace, show each status, ask its
  // questions (each key once: a poll lists everything outstanding, answered keys may linger), send
  // the answers with tasks/update, and show the end as a plain call's. Leaving the task (stopping
  // its questions, or starting another conversation) cancels it: nobody would follow it any more.
  async function followTask(view, created, token, render, round) {
    const taskId = String(created.taskId ?? "");
    const state = h("strong", { class: "task-status" }, "");
    const message = h("span", { class: "task-message muted", role: "status" }, "");
    const polls = h("span", { class: "muted task-polls" }, "");
    const cancel = h("button", { type: "button", class: "cancel-task" }, "Cancel task");
    const card = h("div", { class: "card task", "data-task": taskId, "aria-label": "Task" },
      h("h3", {}, "Task ", h("code", {}, taskId)), h("p", {}, "Status: ", state, " ", message), h("p", {}, polls), h("div", { class: "actions" }, cancel));
    view.result.before(card);
    const answered = new Set();
    let cancelled = false;
    let lastShown = String(created.status);
    let count = 0;
    const sendCancel = async () => {
      if (cancelled) return;
      cancelled = true;
      cancel.disabled = true;
      const exchange = await post("tasks/cancel", { taskId });
      roundCard(view, ++round, exchange);
    };
    cancel.addEventListener("click", sendCancel);
    const show = (task) => {
      state.textContent = String(task.status);
      card.dataset.status = String(task.status);
      message.textContent = typeof task.statusMessage === "string" ? task.statusMessage : "";
      polls.textContent = `${count} poll${count === 1 ? "" : "s"}, every ${delay(task)} ms`;
    };
    const delay = (task) => Math.min(Math.max(Number.isInteger(task.pollIntervalMs) ? task.pollIntervalMs : TASK_POLL.fallback, TASK_POLL.min), TASK_POLL.max);
    let task = created;
    for (;;) {
      if (token !== conversationToken) return sendCancel();
      show(task);
      if (task.status === "completed") {
        cancel.disabled = true;
        return isObject(task.result) ? render(view, task.result) : showError(view, "The task completed without a result");
      }
      if (task.status === "failed") {
        cancel.disabled = true;
        const e = isObject(task.error) ? task.error : {};
        return showError(view, `Task failed: JSON-RPC error ${e.code}: ${e.message}`, e.data);
      }
      if (task.status === "cancelled") {
        cancel.disabled = true;
        return showError(view, `Task cancelled${typeof task.statusMessage === "string" ? `: ${task.statusMessage}` : ""}`);
      }
      const pending = {};
      if (task.status === "input_required" && isObject(task.inputRequests)) {
        for (const [key, request] of Object.entries(task.inputRequests)) if (!answered.has(key)) pending[key] = request;
      }
      if (Object.keys(pending).length && !cancelled) {
        const answers = await answerAll(view, pending, round, {}, "The task");
        if (token !== conversationToken) return sendCancel();
        if (answers === null) {
          await sendCancel();
        } else {
          Object.keys(answers).forEach((key) => answered.add(key));
          const exchange = await post("tasks/update", { taskId, inputResponses: answers });
          exchange.sentKeys = Object.keys(answers);
          roundCard(view, ++round, exchange);
          if (exchange.failure || exchange.answer.error) return showError(view, exchange.failure || `JSON-RPC error ${exchange.answer.error.code}: ${exchange.answer.error.message}`);
        }
      } else {
        await new Promise((done) => setTimeout(done, delay(task)));
      }
      const exchange = await post("tasks/get", { taskId });
      count += 1;
      const answer = exchange.answer;
      if (exchange.failure || answer.error || !isObject(answer.result)) {
        roundCard(view, ++round, exchange);
        return showError(view, exchange.failure || (answer.error ? `JSON-RPC error ${answer.error.code}: ${answer.error.message}` : "The answer has no result"));
      }
      task = answer.result;
      // The timeline shows a poll only when the task's status changed: one card per poll would bury it.
      if (task.status !== lastShown) roundCard(view, ++round, exchange);
      lastShown = task.status;
    }
  }

  // The answers the server refused, by key: {reason, content} where reason may be absent. A refused
  // answer makes the server ask the same key again: with _meta["fastapi-mrtr/refused-answer"]
  // saying why, or (a server that does not say) with the very same request as before.
  function refusals(requests, previous, responses) {
    const out = {};
    const bare = (request) => {
      if (!isObject(request) || !isObject(request.params)) return JSON.stringify(request);
      const { _meta, ...params } = request.params;
      return JSON.stringify({ ...request, params });
    };
    for (const [key, request] of Object.entries(requests)) {
      if (!responses || !(key in responses)) continue; // not answered last round: a first ask
      const p = isObject(request) && isObject(request.params) ? request.params : {};
      const note = isObject(p._meta) ? p._meta[REFUSED] : undefined;
      const response = responses[key];
      const content = isObject(response) && isObject(response.content) ? response.content : undefined;
      if (isObject(note)) out[key] = { reason: typeof note.reason === "string" ? note.reason : "", content };
      else if (key in previous && bare(previous[key]) === bare(request)) out[key] = { reason: "", content };
    }
    return out;
  }

  function showError(view, text, data) {
    view.result.replaceChildren(h("div", { class: "card result is-error", role: "alert" }, h("h3", {}, "Failed"), h("p", {}, text), data !== undefined ? h("pre", {}, pretty(data)) : null));
  }

  // One card per input request; resolves with {key: response} once every card is answered.
  function answerAll(view, requests, round, refused = {}, who = `Round ${round}`) {
    return new Promise((resolve) => {
      const answers = {};
      const keys = Object.keys(requests);
      const box = h("div", { class: "card", "data-round": round }, h("h3", {}, `${who} asks ${keys.length} question${keys.length === 1 ? "" : "s"}`));
      const stop = h("button", { type: "button", onclick: () => { box.remove(); resolve(null); } }, "Stop this flow");
      const done = (key, card, response) => {
        answers[key] = response;
        card.classList.add("answered");
        card.querySelectorAll("button, input, select, textarea").forEach((n) => { n.disabled = true; });
        put(card, h("p", { class: "muted" }, `Answered: ${response.action || (response.roots ? "roots" : "reply")}`));
        if (Object.keys(answers).length === keys.length) {
          box.remove();
          resolve(answers);
        }
      };
      for (const key of keys) box.append(askCard(key, requests[key], done, refused[key]));
      box.append(h("div", { class: "actions" }, stop));
      view.asks.replaceChildren(box);
      const first = box.querySelector("input, select, textarea, button");
      if (first) first.focus();
    });
  }

  function askCard(key, request, done, refused) {
    const req = isObject(request) ? request : {};
    const p = isObject(req.params) ? req.params : {};
    const card = h("section", { class: "ask", "data-key": key, "aria-label": `Question ${key}` }, h("p", { class: "muted" }, `${key}: ${req.method}`));
    if (refused) {
      const text = `your answer was not accepted${refused.reason ? `: ${refused.reason}` : ""}`;
      put(card, h("p", { class: "error refused", role: "alert" }, text));
    }
    const finish = (response) => done(key, card, response);
    if (req.method === "elicitation/create" && p.mode === "url") {
      const href = safeHttpUrl(p.url);
      put(card, h("p", { class: "message" }, String(p.message ?? "")),
        href ? h("p", {}, h("a", { href, target: "_blank", rel: "noopener noreferrer" }, href)) : h("p", { class: "error" }, `Not an http(s) URL: ${p.url}`),
        h("p", { class: "muted" }, "Open the link, finish there, then say so here."),
        h("div", { class: "actions" },
          h("button", { type: "button", class: "primary", onclick: () => finish({ action: "accept" }) }, "Done"),
          h("button", { type: "button", onclick: () => finish({ action: "decline" }) }, "Decline"),
          h("button", { type: "button", onclick: () => finish({ action: "cancel" }) }, "Cancel")));
    } else if (req.method === "elicitation/create") {
      // A refused answer comes back as it was typed, to be corrected rather than typed again.
      const form = schemaForm(p.requestedSchema, { allowRaw: false, values: refused ? refused.content : undefined });
      put(card, h("p", { class: "message" }, String(p.message ?? "")), form.el,
        h("div", { class: "actions" },
          h("button", { type: "button", class: "primary", onclick: () => { const content = form.read(); if (content !== undefined) finish({ action: "accept", content }); } }, "Accept"),
          h("button", { type: "button", onclick: () => finish({ action: "decline" }) }, "Decline"),
          h("button", { type: "button", onclick: () => finish({ action: "cancel" }) }, "Cancel")));
    } else if (req.method === "sampling/createMessage") {
      const messages = Array.isArray(p.messages) ? p.messages : [];
      const replyId = newId("reply");
      const modelId = newId("model");
      const reply = h("textarea", { id: replyId, rows: 3 });
      const model = h("input", { id: modelId, type: "text", value: "human-in-the-playground" });
      put(card, 
        p.systemPrompt != null ? h("p", { class: "muted" }, `System: ${p.systemPrompt}`) : null,
        h("ul", { "aria-label": "Messages to the model" }, messages.map((m) => h("li", {}, h("strong", {}, `${m.role}: `), blocksOf(m.content)))),
        h("p", { class: "muted" }, `maxTokens ${p.maxTokens}`),
        h("div", { class: "field" }, h("label", { for: replyId }, "Reply as the model"), reply),
        h("div", { class: "field" }, h("label", { for: modelId }, "Model name"), model),
        h("div", { class: "actions" }, h("button", { type: "button", class: "primary", onclick: () => finish({ role: "assistant", content: { type: "text", text: reply.value }, model: model.value || "unknown", stopReason: "endTurn" }) }, "Send reply")));
    } else if (req.method === "roots/list") {
      const rows = h("div", { class: "roots" });
      const addRow = (uri = "", name = "") => {
        const uriId = newId("uri");
        const nameId = newId("name");
        const row = h("div", { class: "roots-row" },
          h("label", { for: uriId }, "URI"), h("input", { id: uriId, type: "text", value: uri, class: "root-uri" }),
          h("label", { for: nameId }, "Name"), h("input", { id: nameId, type: "text", value: name, class: "root-name" }));
        row.append(h("button", { type: "button", onclick: () => row.remove(), "aria-label": "Remove this root" }, "Remove"));
        rows.append(row);
      };
      addRow("file:///home/user/project", "project");
      put(card, h("p", { class: "message" }, "The server asks for your roots."), rows,
        h("div", { class: "actions" },
          h("button", { type: "button", onclick: () => addRow() }, "Add root"),
          h("button", { type: "button", class: "primary", onclick: () => {
            const roots = [...rows.querySelectorAll(".roots-row")].map((r) => ({ uri: r.querySelector(".root-uri").value.trim(), name: r.querySelector(".root-name").value.trim() }))
              .filter((r) => r.uri).map((r) => (r.name ? r : { uri: r.uri }));
            finish({ roots });
          } }, "Send roots")));
    } else {
      const areaId = newId("answer");
      const area = h("textarea", { id: areaId, class: "json" });
      area.value = "{}";
      const error = h("p", { class: "error", role: "alert" });
      put(card, h("pre", {}, pretty(req)), h("label", { for: areaId }, "Answer (JSON)"), area, error,
        h("button", { type: "button", onclick: () => { try { finish(JSON.parse(area.value)); } catch { error.textContent = "Not JSON"; } } }, "Send"));
    }
    return card;
  }

  // --- results ------------------------------------------------------------------------------------

  function blocksOf(content) {
    const blocks = Array.isArray(content) ? content : content === undefined ? [] : [content];
    return blocks.map((b) => h("div", { class: "block" }, block(b)));
  }

  function block(b) {
    if (!isObject(b)) return h("pre", {}, pretty(b));
    if (b.type === "text") return h("pre", { class: "text" }, String(b.text ?? ""));
    if (b.type === "image") {
      const src = dataUrl(b.mimeType, b.data, "image");
      return src ? h("img", { src, alt: `image (${b.mimeType})` }) : h("p", { class: "error" }, "An image that is not base64 of an image/* type");
    }
    if (b.type === "audio") {
      const src = dataUrl(b.mimeType, b.data, "audio");
      return src ? h("audio", { src, controls: true, "aria-label": `audio (${b.mimeType})` }) : h("p", { class: "error" }, "Audio that is not base64 of an audio/* type");
    }
    if (b.type === "resource") return resourceContents(b.resource);
    if (b.type === "resource_link") {
      const href = safeHttpUrl(b.uri);
      return h("p", {}, "Link: ", href ? h("a", { href, target: "_blank", rel: "noopener noreferrer" }, String(b.name ?? b.uri)) : `${b.name ?? ""} ${b.uri}`);
    }
    return h("pre", {}, pretty(b));
  }

  function resourceContents(r) {
    if (!isObject(r)) return h("pre", {}, pretty(r));
    const head = h("p", { class: "muted" }, `${r.uri}${r.mimeType ? ` (${r.mimeType})` : ""}`);
    if (typeof r.text === "string") return h("div", { class: "resource" }, head, h("pre", {}, r.text));
    const img = typeof r.blob === "string" ? dataUrl(r.mimeType, r.blob, "image") : null;
    return h("div", { class: "resource" }, head, img ? h("img", { src: img, alt: String(r.uri) }) : h("p", {}, `${typeof r.blob === "string" ? Math.floor((r.blob.length * 3) / 4) : 0} bytes of binary`));
  }

  // structuredContent: a table when it is rows of scalars or one flat object, else a tree.
  const scalar = (v) => v === null || typeof v !== "object";
  function structured(value) {
    if (Array.isArray(value) && value.length && value.every((r) => isObject(r) && Object.values(r).every(scalar))) {
      const cols = [...new Set(value.flatMap((r) => Object.keys(r)))];
      return h("table", {}, h("thead", {}, h("tr", {}, cols.map((c) => h("th", { scope: "col" }, c)))),
        h("tbody", {}, value.map((r) => h("tr", {}, cols.map((c) => h("td", {}, r[c] === undefined ? "" : JSON.stringify(r[c])))))));
    }
    if (isObject(value) && Object.values(value).every(scalar)) {
      return h("table", {}, h("tbody", {}, Object.entries(value).map(([k, v]) => h("tr", {}, h("th", { scope: "row" }, k), h("td", {}, JSON.stringify(v))))));
    }
    return tree(value);
  }

  function tree(value) {
    if (scalar(value)) return h("span", { class: "value" }, JSON.stringify(value));
    const entries = Array.isArray(value) ? value.map((v, i) => [String(i), v]) : Object.entries(value);
    return h("ul", { class: "tree" }, entries.map(([k, v]) => h("li", {}, h("span", { class: "key" }, `${k}: `), tree(v))));
  }

  function renderToolResult(view, result) {
    const error = result.isError === true;
    const card = h("div", { class: `card result${error ? " is-error" : ""}`, role: error ? "alert" : undefined },
      h("h3", {}, error ? "Error result (isError)" : "Result"), blocksOf(result.content || []));
    if (result.structuredContent !== undefined) put(card, h("h3", {}, "structuredContent"), h("div", { class: "structured" }, structured(result.structuredContent)));
    view.result.replaceChildren(card);
  }

  function renderPromptResult(view, result) {
    view.result.replaceChildren(h("div", { class: "card result" }, h("h3", {}, "Prompt"),
      result.description != null ? h("p", {}, String(result.description)) : null,
      (Array.isArray(result.messages) ? result.messages : []).map((m) => h("div", { class: "message-block" }, h("strong", {}, `${m.role}:`), blocksOf(m.content)))));
  }

  function renderResourceResult(view, result) {
    view.result.replaceChildren(h("div", { class: "card result" }, h("h3", {}, "Contents"),
      (Array.isArray(result.contents) ? result.contents : []).map((c) => resourceContents(c))));
  }

  // --- lists and details ------------------------------------------------------------------------------

  function badges(annotations) {
    const a = isObject(annotations) ? annotations : {};
    const out = [];
    if (a.readOnlyHint === true) out.push(h("span", { class: "badge readonly" }, "read-only"));
    if (a.destructiveHint === true) out.push(h("span", { class: "badge destructive" }, "destructive"));
    if (a.idempotentHint === true) out.push(h("span", { class: "badge" }, "idempotent"));
    if (a.openWorldHint === true) out.push(h("span", { class: "badge" }, "open world"));
    return out;
  }

  const titleOf = (item) => String(item.title ?? (isObject(item.annotations) ? item.annotations.title : null) ?? item.name ?? item.uri ?? item.uriTemplate);

  async function loadList() {
    const status = $("list-status");
    if (lists[kind]) return drawList();
    const capability = { tools: "tools", prompts: "prompts", resources: "resources" }[kind];
    if (!capabilities[capability]) {
      lists[kind] = [];
      status.textContent = `This server has no ${kind}.`;
      return drawList();
    }
    status.textContent = "Loading...";
    try {
      if (kind === "tools") lists.tools = await listAll("tools/list", "tools");
      else if (kind === "prompts") lists.prompts = await listAll("prompts/list", "prompts");
      else {
        const fixed = await listAll("resources/list", "resources");
        const templates = await listAll("resources/templates/list", "resourceTemplates");
        lists.resources = [...fixed, ...templates];
      }
      status.textContent = `${lists[kind].length} ${kind}`;
    } catch (error) {
      lists[kind] = null;
      status.textContent = `Could not list ${kind}: ${error.message}`;
      return;
    }
    drawList();
  }

  function drawList() {
    const query = $("filter").value.trim().toLowerCase();
    const shown = (lists[kind] || []).filter((item) =>
      !query || [item.name, item.title, item.description, item.uri, item.uriTemplate].some((t) => t != null && String(t).toLowerCase().includes(query)));
    $("items").replaceChildren(...shown.map((item) => h("li", {}, h("button", {
      type: "button", class: "item", "data-name": item.name ?? "", "aria-current": item === selected ? "true" : undefined,
      onclick: () => choose(item),
      onkeydown: (e) => {
        if (e.key !== "ArrowDown" && e.key !== "ArrowUp") return;
        const li = e.currentTarget.parentElement;
        const next = e.key === "ArrowDown" ? li.nextElementSibling : li.previousElementSibling;
        if (next) next.querySelector("button").focus();
        e.preventDefault();
      },
    }, h("span", { class: "name" }, titleOf(item)), item.title || (isObject(item.annotations) && item.annotations.title) ? h("span", { class: "desc" }, String(item.name)) : null,
      item.description != null ? h("span", { class: "desc" }, String(item.description).split("\n")[0]) : null, badges(item.annotations)))));
  }

  function choose(item) {
    selected = item;
    drawList();
    $("conversation").replaceChildren();
    if (kind === "tools") toolDetail(item);
    else if (kind === "prompts") promptDetail(item);
    else resourceDetail(item);
  }

  function detailCard(item, extra) {
    return h("div", { class: "card" }, h("h2", {}, titleOf(item)), h("p", {}, h("code", {}, String(item.name ?? item.uri ?? item.uriTemplate)), " ", badges(item.annotations)),
      item.description != null ? h("p", { class: "description" }, String(item.description)) : null, extra);
  }

  function logLevelPicker() {
    const id = "log-level";
    const levels = ["", "debug", "info", "notice", "warning", "error"];
    return h("span", {}, h("label", { for: id }, "Log level "), h("select", { id }, levels.map((l) => h("option", { value: l }, l || "(none)"))));
  }

  function toolDetail(tool) {
    const form = schemaForm(tool.inputSchema);
    const decls = paramHeaderDecls(tool.inputSchema);
    const run = () => {
      const args = form.read();
      if (args === undefined) return;
      converse("tools/call", { name: tool.name, arguments: args }, `Call ${tool.name}`, renderToolResult, paramHeaders(decls, args));
    };
    const picker = logLevelPicker();
    picker.querySelector("select").value = "info";
    $("detail").replaceChildren(detailCard(tool, h("div", {},
      tool.outputSchema ? h("p", { class: "muted" }, "Declares an outputSchema") : null,
      h("h3", {}, "Arguments"), form.el,
      h("div", { class: "actions" }, h("button", { type: "button", class: "primary", id: "run", onclick: run }, "Call tool"), picker))));
  }

  function promptDetail(prompt) {
    const args = Array.isArray(prompt.arguments) ? prompt.arguments : [];
    const schema = { type: "object", properties: {}, required: args.filter((a) => a.required).map((a) => a.name) };
    for (const a of args) schema.properties[a.name] = { type: "string", title: a.title ?? a.name, description: a.description };
    const form = schemaForm(schema);
    const run = () => {
      const values = form.read();
      if (values === undefined) return;
      converse("prompts/get", { name: prompt.name, arguments: values }, `Get ${prompt.name}`, renderPromptResult);
    };
    $("detail").replaceChildren(detailCard(prompt, h("div", {}, h("h3", {}, "Arguments"), form.el,
      h("div", { class: "actions" }, h("button", { type: "button", class: "primary", id: "run", onclick: run }, "Get prompt")))));
  }

  function resourceDetail(resource) {
    if (typeof resource.uriTemplate === "string") {
      const names = [...resource.uriTemplate.matchAll(/\{([+#./;?&]?)([^}]+)\}/g)];
      const schema = { type: "object", properties: {}, required: [] };
      for (const [, , list] of names) for (const n of list.split(",")) { schema.properties[n.replace(/\*$/, "")] = { type: "string" }; schema.required.push(n.replace(/\*$/, "")); }
      const form = schemaForm(schema, { allowRaw: false });
      const run = () => {
        const values = form.read();
        if (values === undefined) return;
        const uri = resource.uriTemplate.replace(/\{([+#./;?&]?)([^}]+)\}/g, (_, op, list) =>
          list.split(",").map((n) => (op === "+" || op === "#" ? encodeURI : encodeURIComponent)(String(values[n.replace(/\*$/, "")] ?? ""))).join(","));
        converse("resources/read", { uri }, `Read ${uri}`, renderResourceResult);
      };
      $("detail").replaceChildren(detailCard(resource, h("div", {}, h("p", { class: "muted" }, `Template ${resource.uriTemplate}`), form.el,
        h("div", { class: "actions" }, h("button", { type: "button", class: "primary", id: "run", onclick: run }, "Read resource")))));
    } else {
      const run = () => converse("resources/read", { uri: resource.uri }, `Read ${resource.uri}`, renderResourceResult);
      $("detail").replaceChildren(detailCard(resource, h("div", {}, h("p", { class: "muted" }, `${resource.uri}${resource.mimeType ? ` (${resource.mimeType})` : ""}`),
        h("div", { class: "actions" }, h("button", { type: "button", class: "primary", id: "run", onclick: run }, "Read resource")))));
    }
  }

  // --- tabs, filter, authorize, start -----------------------------------------------------------------

  function selectTab(button) {
    for (const tab of document.querySelectorAll('[role="tab"]')) {
      const on = tab === button;
      tab.setAttribute("aria-selected", on ? "true" : "false");
      tab.tabIndex = on ? 0 : -1;
    }
    $("panel").setAttribute("aria-labelledby", button.id);
    kind = button.dataset.kind;
    selected = null;
    $("filter").value = "";
    $("list-status").textContent = "";
    $("detail").replaceChildren(h("p", { class: "muted" }, "Choose an item on the left."));
    $("conversation").replaceChildren();
    loadList();
  }

  function wire() {
    const tabs = [...document.querySelectorAll('[role="tab"]')];
    tabs.forEach((tab, i) => {
      tab.addEventListener("click", () => selectTab(tab));
      tab.addEventListener("keydown", (e) => {
        const step = { ArrowRight: 1, ArrowLeft: -1 }[e.key];
        if (!step) return;
        const next = tabs[(i + step + tabs.length) % tabs.length];
        next.focus();
        selectTab(next);
        e.preventDefault();
      });
    });
    $("filter").addEventListener("input", drawList);
    $("auth-form").addEventListener("submit", (e) => {
      e.preventDefault();
      authorization = $("auth-value").value.trim();
      $("auth-status").textContent = authorization ? "sent with every request" : "not sent";
      lists.tools = lists.prompts = lists.resources = null; // lists may depend on who asks
      loadList();
    });
    $("auth-clear").addEventListener("click", () => {
      $("auth-value").value = "";
      authorization = "";
      $("auth-status").textContent = "not sent";
      if (signIn) signIn.signOut();
    });
    if (signIn) {
      $("auth-signin").hidden = false;
      $("auth-signin").addEventListener("click", () => {
        $("auth-status").textContent = "signing in...";
        signIn.begin(challenged).catch((error) => {
          $("auth-status").textContent = `sign-in failed: ${error && error.message ? error.message : error}`;
        });
      });
    }
  }

  // --- signing in (signin.js; only when the endpoint is an OAuth resource server) ---------------

  const signIn = window.mrtrSignIn || null;
  let challenged = []; // the scopes the last 401/403 challenge named: the next sign-in asks for them

  function offerSignIn(status, header) {
    if (!signIn) return;
    challenged = signIn.challengedScopes(header);
    const scopes = challenged.length ? ` (scope ${challenged.join(" ")})` : "";
    $("auth-status").textContent = status === 401 ? `sign-in needed${scopes}` : `more access needed${scopes}`;
    $("auth-signin").textContent = status === 401 ? "Sign in" : "Sign in again";
  }

  async function resumeSignIn() {
    if (!signIn) return;
    try {
      const header = await signIn.complete();
      if (!header) return;
      authorization = header;
      $("auth-status").textContent = `signed in (scope ${signIn.scope() || "none"})`;
      $("auth-signin").textContent = "Sign in again";
    } catch (error) {
      $("auth-status").textContent = `sign-in failed: ${error && error.message ? error.message : error}`;
    }
  }

  async function start() {
    wire();
    await resumeSignIn();
    const exchange = await post("server/discover", {});
    if (exchange.failure || exchange.answer.error) {
      $("list-status").textContent = `server/discover failed: ${exchange.failure || exchange.answer.error.message}`;
      return;
    }
    const result = exchange.answer.result;
    capabilities = isObject(result.capabilities) ? result.capabilities : {};
    const info = isObject(result._meta) && isObject(result._meta[`${M}serverInfo`]) ? result._meta[`${M}serverInfo`] : {};
    $("server-name").textContent = String(info.title ?? info.name ?? "MCP server");
    $("server-version").textContent = info.version != null ? String(info.version) : "";
    $("server-instructions").textContent = result.instructions != null ? String(result.instructions) : "";
    document.title = `${$("server-name").textContent}: MCP playground`;
    await loadList();
    document.body.dataset.ready = "true";
  }

  start();
})();
