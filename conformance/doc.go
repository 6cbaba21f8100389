// Package conformance speaks ADK's conformance protocol: the case files of
// ADK's conformance suite (spec.yaml, generated-recordings.yaml,
// generated-session.yaml), the replay and recording plugins a server runs
// when a request's state delta carries _adk_replay_config or
// _adk_recordings_config, and a client that runs the cases against any
// ADK-compatible server and compares the sessions they leave with the
// recorded ones.
//
// # Cases
//
// A case is a directory holding spec.yaml (the agent, an optional initial
// state and the user messages) and, once recorded, generated-recordings.yaml
// (every model request and response and every tool call of every agent, per
// user message) and generated-session.yaml (the session the run left).
// Streaming runs use the -sse variants of the generated files.
//
// # Replay
//
// [Replay] is a plugin: for an invocation whose session state holds
// _adk_replay_config = {dir, user_message_index, streaming_mode}, it answers
// each agent's model calls with the recorded responses, in order, after
// checking that the request equals the recorded one (http_options, labels
// and live_connect_config aside), and each tool call with the recorded
// result, after checking the call's name and arguments. A request that
// differs fails the turn with the differing fields (path, want, got). It
// swaps models, so servers enable it only for tests (loom api
// --conformance).
//
// # Comparison
//
// [CompareEvents] and [CompareSession] compare a session with a recorded
// one as ADK does: event ids, timestamps, invocation ids, function call and
// response ids, thought signatures, long-running tool ids, requested auth
// and confirmation maps and the _adk_* state keys are ignored; numbers
// compare by value (800 equals 800.0); camelCase and snake_case keys are the
// same key.
//
// # Running cases
//
// [Run] drives a server over HTTP the way ADK's "adk conformance test"
// does and reports one [Result] per case; [Record] records cases from a
// live model.
package conformance
