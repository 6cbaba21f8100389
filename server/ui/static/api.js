// Client for Loom's ADK-compatible HTTP API.

/** An error answered by the API: its HTTP status and the server's detail. */
export class ApiError extends Error {
  constructor(status, detail) {
    super(detail || `HTTP ${status}`);
    this.status = status;
  }
}

const enc = encodeURIComponent;

export class Client {
  /** @param {string} base the API's base URL; "" for the page's origin */
  constructor(base = '') {
    this.base = base.replace(/\/+$/, '');
  }

  async request(method, path, body) {
    const init = { method, headers: { Accept: 'application/json' } };
    if (body !== undefined) {
      init.headers['Content-Type'] = 'application/json';
      init.body = JSON.stringify(body);
    }
    const res = await fetch(this.base + path, init);
    const text = await res.text();
    let data = null;
    if (text) {
      try { data = JSON.parse(text); } catch { data = text; }
    }
    if (!res.ok) {
      const detail = data && typeof data === 'object' ? data.detail : data;
      throw new ApiError(res.status, typeof detail === 'string' ? detail : JSON.stringify(detail));
    }
    return data;
  }

  version() { return this.request('GET', '/version'); }

  /** Returns [{name, description, rootAgentName}], falling back to names only. */
  async listApps() {
    try {
      const data = await this.request('GET', '/list-apps?detailed=true');
      if (data && Array.isArray(data.apps)) return data.apps;
      if (Array.isArray(data)) return data.map((name) => ({ name }));
    } catch (e) {
      if (!(e instanceof ApiError)) throw e;
    }
    const names = await this.request('GET', '/list-apps');
    return (names || []).map((name) => ({ name }));
  }

  sessionsPath(app, user) { return `/apps/${enc(app)}/users/${enc(user)}/sessions`; }
  sessionPath(app, user, sid) { return `${this.sessionsPath(app, user)}/${enc(sid)}`; }

  listSessions(app, user) { return this.request('GET', this.sessionsPath(app, user)); }
  createSession(app, user, state) { return this.request('POST', this.sessionsPath(app, user), state ? { state } : {}); }
  getSession(app, user, sid) { return this.request('GET', this.sessionPath(app, user, sid)); }
  deleteSession(app, user, sid) { return this.request('DELETE', this.sessionPath(app, user, sid)); }
  /** A session's token usage and cost: {total, turns: [{invocation_id, ...}]}. */
  sessionUsage(app, user, sid) { return this.request('GET', `${this.sessionPath(app, user, sid)}/usage`); }
  /** Cancels the invocations running on a session. */
  cancelRuns(app, user, sid) { return this.request('POST', `${this.sessionPath(app, user, sid)}/cancel`); }

  listArtifacts(app, user, sid) { return this.request('GET', `${this.sessionPath(app, user, sid)}/artifacts`); }
  artifactVersions(app, user, sid, name) {
    return this.request('GET', `${this.sessionPath(app, user, sid)}/artifacts/${enc(name)}/versions`);
  }
  /** Loads an artifact (a genai Part); version null for the latest. */
  loadArtifact(app, user, sid, name, version) {
    let path = `${this.sessionPath(app, user, sid)}/artifacts/${enc(name)}`;
    if (version !== null && version !== undefined) path += `/versions/${enc(version)}`;
    return this.request('GET', path);
  }

  /** The recorded spans of a user's session: [{name, span_id, parent_span_id, start_time, end_time, attributes}]. */
  sessionTrace(app, user, sid) {
    return this.request('GET', `/dev/apps/${enc(app)}/debug/trace/session/${enc(sid)}?user_id=${enc(user)}`);
  }
  /** The attributes of the span that produced an event of the user ({} if none). */
  async eventTrace(app, user, eventId) {
    try {
      return await this.request('GET', `/dev/apps/${enc(app)}/debug/trace/${enc(eventId)}?user_id=${enc(user)}`);
    } catch (err) {
      if (err instanceof ApiError && err.status === 404) return {};
      throw err;
    }
  }

  /**
   * Runs the agent through POST /run_sse and yields each event (or
   * {error} frame) as it arrives. EventSource cannot POST, so the stream is
   * read with fetch and parsed here: frames end with a blank line, and only
   * "data:" lines carry content (":" starts a comment).
   */
  async *run(request, signal) {
    const res = await fetch(this.base + '/run_sse', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Accept: 'text/event-stream' },
      body: JSON.stringify(request),
      signal,
    });
    if (!res.ok) {
      let detail = res.statusText;
      try { detail = (await res.json()).detail || detail; } catch { /* not JSON */ }
      throw new ApiError(res.status, detail);
    }
    const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
    let buf = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buf += value;
      let end;
      while ((end = frameEnd(buf)) !== null) {
        const frame = buf.slice(0, end.start);
        buf = buf.slice(end.next);
        const data = frameData(frame);
        if (data !== null) yield JSON.parse(data);
      }
    }
    const data = frameData(buf);
    if (data !== null) yield JSON.parse(data);
  }
}

// frameEnd finds the blank line ending the first frame of buf.
function frameEnd(buf) {
  const m = /\r?\n\r?\n/.exec(buf);
  return m ? { start: m.index, next: m.index + m[0].length } : null;
}

// frameData returns the data of one SSE frame, or null if it has none.
function frameData(frame) {
  const lines = [];
  for (const line of frame.split(/\r?\n/)) {
    if (line.startsWith('data:')) lines.push(line.slice(line.startsWith('data: ') ? 6 : 5));
  }
  return lines.length ? lines.join('\n') : null;
}
