// client.cjs drives a Loom A2A server with the A2A JavaScript SDK's client
// and prints one JSON line per step for the Go test to check.
//
//   node client.cjs NODE_MODULES_DIR BASE_URL
//
// BASE_URL is where the agent card is served below
// (BASE_URL/.well-known/agent-card.json).
'use strict';
const path = require('node:path');
const { createRequire } = require('node:module');
const { randomUUID } = require('node:crypto');

const [modules, base] = process.argv.slice(2);
const sdkRequire = createRequire(path.join(modules, 'index.js'));
const { ClientFactory, ClientFactoryOptions, DefaultAgentCardResolver, JsonRpcTransportFactory } =
  sdkRequire('@a2a-js/sdk/client');
const { TaskState, Role } = sdkRequire('@a2a-js/sdk');

function out(obj) {
  process.stdout.write(JSON.stringify(obj) + '\n');
}

function state(s) {
  return s ? TaskState[s.state].replace('TASK_STATE_', '').toLowerCase().replace('_', '-') : 'none';
}

function textPart(text) {
  return { content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType: 'text/plain' };
}

function message(parts, ids = {}) {
  return {
    tenant: '',
    metadata: {},
    message: {
      messageId: randomUUID(),
      role: Role.ROLE_USER,
      parts,
      taskId: ids.taskId || '',
      contextId: ids.contextId || '',
      extensions: [],
      metadata: {},
      referenceTaskIds: [],
    },
    configuration: undefined,
  };
}

function texts(parts) {
  return (parts || []).filter((p) => p.content && p.content.$case === 'text').map((p) => p.content.value);
}

function artifactText(task) {
  return (task.artifacts || []).flatMap((a) => texts(a.parts)).join('');
}

function calls(msg) {
  return ((msg && msg.parts) || [])
    .filter((p) => p.content && p.content.$case === 'data')
    .map((p) => ({ data: p.content.value, metadata: p.metadata || {} }));
}

async function main() {
  const factory = new ClientFactory(
    ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      cardResolver: new DefaultAgentCardResolver({ legacyCompat: { enabled: true } }),
      transports: [new JsonRpcTransportFactory({ legacyCompat: { enabled: true } })],
    })
  );
  const client = await factory.createFromUrl(base.endsWith('/') ? base : base + '/');
  const card = await client.getAgentCard();
  out({
    step: 'card',
    name: card.name,
    streaming: !!(card.capabilities && card.capabilities.streaming),
    skills: (card.skills || []).map((s) => s.id),
    transport: Object.getPrototypeOf(client.transport).constructor.name,
  });

  // message/send: a blocking send returns the finished task.
  const sent = await client.sendMessage(message([textPart('weather in Paris')]));
  out({ step: 'send', id: sent.id, contextId: sent.contextId, state: state(sent.status), text: artifactText(sent) });

  // message/stream on the same context: the events as they come.
  const kinds = [];
  const states = [];
  let streamed = '';
  let streamTask = '';
  for await (const ev of client.sendMessageStream(message([textPart('weather in Rome')], { contextId: sent.contextId }))) {
    const p = ev.payload;
    if (!p) continue;
    kinds.push(p.$case);
    if (p.$case === 'task') {
      streamTask = p.value.id;
      states.push(state(p.value.status));
    } else if (p.$case === 'statusUpdate') {
      states.push(state(p.value.status));
    } else if (p.$case === 'artifactUpdate') {
      streamed += texts(p.value.artifact.parts).join('');
    }
  }
  out({ step: 'stream', id: streamTask, kinds, states, text: streamed });

  // tasks/get of the first task.
  const got = await client.getTask({ tenant: '', id: sent.id, historyLength: undefined });
  out({ step: 'get', id: got.id, contextId: got.contextId, state: state(got.status), text: artifactText(got) });

  // A task that pauses for a confirmation, resumed by the next message.
  const paused = await client.sendMessage(message([textPart('email bob@example.com: lunch at noon')]));
  out({ step: 'paused', id: paused.id, state: state(paused.status), calls: calls(paused.status && paused.status.message) });
  const resumed = await client.sendMessage(message([textPart('yes')], { taskId: paused.id, contextId: paused.contextId }));
  out({ step: 'resumed', id: resumed.id, state: state(resumed.status), text: artifactText(resumed) });

  // tasks/cancel of a running task, while its stream is open.
  let cancelled = null;
  const cancelStates = [];
  let cancelTask = '';
  for await (const ev of client.sendMessageStream(message([textPart('slow job')]))) {
    const p = ev.payload;
    if (!p) continue;
    if (p.$case === 'task') cancelTask = p.value.id;
    if (p.$case === 'statusUpdate') {
      cancelTask = p.value.taskId;
      cancelStates.push(state(p.value.status));
      if (!cancelled && calls(p.value.status.message).some((c) => c.data.name === 'slow_job')) {
        cancelled = await client.cancelTask({ tenant: '', id: cancelTask, metadata: {} });
      }
    }
  }
  const afterCancel = await client.getTask({ tenant: '', id: cancelTask, historyLength: undefined });
  out({
    step: 'cancel',
    id: cancelTask,
    cancelState: cancelled ? state(cancelled.status) : 'not cancelled',
    streamStates: cancelStates,
    state: state(afterCancel.status),
  });

  // A JSON-RPC error: an unknown task.
  try {
    await client.getTask({ tenant: '', id: 'no-such-task', historyLength: undefined });
    out({ step: 'error', error: '' });
  } catch (e) {
    out({ step: 'error', error: String(e && e.message) });
  }
}

main().catch((e) => {
  process.stderr.write(String((e && e.stack) || e) + '\n');
  process.exit(1);
});
