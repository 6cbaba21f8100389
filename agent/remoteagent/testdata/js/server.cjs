// server.cjs is a small scripted A2A agent on the A2A JavaScript SDK's
// server (a v1.0 server accepting 0.3 clients through its compatibility
// layer). It prints "listening URL" once it serves, URL being the base URL
// of its agent card.
//
//   node server.cjs NODE_MODULES_DIR
//
// Its script, by the text of the user's message:
//   "fail ..."        the task fails with a message;
//   "reject ..."      the task is rejected;
//   "name ..."        the task asks "What is your name?" (input-required)
//                     and answers the reply with "Nice to meet you, REPLY.";
//   anything else     a "working" status, then an artifact
//                     "js agent: TEXT (turn N)", N counting the turns of the
//                     context, then "completed".
'use strict';
const path = require('node:path');
const { createRequire } = require('node:module');
const { randomUUID } = require('node:crypto');

const [modules] = process.argv.slice(2);
const sdkRequire = createRequire(path.join(modules, 'index.js'));
const express = sdkRequire('express');
const { TaskState, Role, AGENT_CARD_PATH, A2A_PROTOCOL_VERSION } = sdkRequire('@a2a-js/sdk');
const { DefaultRequestHandler, InMemoryTaskStore, AgentEvent } = sdkRequire('@a2a-js/sdk/server');
const { agentCardHandler, jsonRpcHandler, UserBuilder } = sdkRequire('@a2a-js/sdk/server/express');
const { duplicateInterfacesForLegacy } = sdkRequire('@a2a-js/sdk/compat/v0_3');

function textPart(text) {
  return { content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType: 'text/plain' };
}

function agentMessage(ctx, text) {
  return {
    role: Role.ROLE_AGENT,
    messageId: randomUUID(),
    parts: [textPart(text)],
    taskId: ctx.taskId,
    contextId: ctx.contextId,
    extensions: [],
    metadata: {},
    referenceTaskIds: [],
  };
}

function textOf(message) {
  return message.parts
    .filter((p) => p.content && p.content.$case === 'text')
    .map((p) => p.content.value)
    .join(' ')
    .trim();
}

class ScriptedExecutor {
  constructor() {
    this.turns = new Map(); // context id -> turns
    this.asked = new Set(); // ids of the tasks waiting for a name
    this.cancelTask = async (taskId, bus) => {};
  }

  async execute(ctx, bus) {
    const text = textOf(ctx.userMessage);
    const status = (state, message) =>
      bus.publish(
        AgentEvent.statusUpdate({
          taskId: ctx.taskId,
          contextId: ctx.contextId,
          status: { state, message, timestamp: new Date().toISOString() },
          metadata: {},
        })
      );
    const artifact = (value) =>
      bus.publish(
        AgentEvent.artifactUpdate({
          taskId: ctx.taskId,
          contextId: ctx.contextId,
          artifact: { artifactId: randomUUID(), name: 'answer', description: '', parts: [textPart(value)], metadata: undefined, extensions: [] },
          lastChunk: true,
          append: false,
          metadata: undefined,
        })
      );
    bus.publish(
      AgentEvent.task(
        ctx.task || {
          id: ctx.taskId,
          contextId: ctx.contextId,
          status: { state: TaskState.TASK_STATE_SUBMITTED, timestamp: new Date().toISOString(), message: undefined },
          artifacts: [],
          history: [ctx.userMessage],
          metadata: {},
        }
      )
    );
    if (this.asked.delete(ctx.taskId)) {
      status(TaskState.TASK_STATE_WORKING, undefined);
      artifact(`Nice to meet you, ${text}.`);
      status(TaskState.TASK_STATE_COMPLETED, undefined);
    } else if (text.startsWith('fail')) {
      status(TaskState.TASK_STATE_FAILED, agentMessage(ctx, 'the js agent failed on purpose'));
    } else if (text.startsWith('reject')) {
      status(TaskState.TASK_STATE_REJECTED, agentMessage(ctx, 'the js agent does not do that'));
    } else if (text.startsWith('name')) {
      this.asked.add(ctx.taskId);
      status(TaskState.TASK_STATE_INPUT_REQUIRED, agentMessage(ctx, 'What is your name?'));
    } else {
      const n = (this.turns.get(ctx.contextId) || 0) + 1;
      this.turns.set(ctx.contextId, n);
      status(TaskState.TASK_STATE_WORKING, agentMessage(ctx, 'thinking'));
      artifact(`js agent: ${text} (turn ${n})`);
      status(TaskState.TASK_STATE_COMPLETED, undefined);
    }
    bus.finished();
  }
}

const app = express();
const server = app.listen(0, '127.0.0.1', () => {
  const base = `http://127.0.0.1:${server.address().port}`;
  const card = {
    name: 'js-agent',
    description: 'A scripted agent on the A2A JavaScript SDK.',
    supportedInterfaces: duplicateInterfacesForLegacy(
      [{ url: `${base}/a2a/jsonrpc`, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: A2A_PROTOCOL_VERSION }],
      ['JSONRPC']
    ),
    provider: undefined,
    version: '1.0.0',
    capabilities: { streaming: true, pushNotifications: false, extensions: [], extendedAgentCard: false },
    securitySchemes: {},
    securityRequirements: [],
    defaultInputModes: ['text'],
    defaultOutputModes: ['text'],
    skills: [{ id: 'echo', name: 'echo', description: 'Echoes.', tags: ['test'], examples: [], inputModes: ['text'], outputModes: ['text'], securityRequirements: [] }],
    documentationUrl: '',
    signatures: [],
  };
  const handler = new DefaultRequestHandler(card, new InMemoryTaskStore(), new ScriptedExecutor());
  app.use(`/${AGENT_CARD_PATH}`, agentCardHandler({ agentCardProvider: handler, legacyCompat: { enabled: true } }));
  app.use('/a2a/jsonrpc', jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication, legacyCompat: { enabled: true } }));
  process.stdout.write(`listening ${base}\n`);
});
process.stdin.on('end', () => process.exit(0)); // the test closes stdin to stop the server
process.stdin.resume();
