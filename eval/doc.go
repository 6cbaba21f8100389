// Package eval evaluates Loom apps with the eval sets, criteria and result
// files of ADK, so that sets written for ADK Python run unchanged.
//
// # Files
//
// [ReadSetFile] reads an eval set file in every form ADK reads, told apart
// by content whatever the file's name: an eval set object ([Set]: cases
// with a static conversation or a scenario for a simulated user, and the
// session they start from), ADK's older list of cases, or the old
// *.test.json list of turns; [ReadConfig] reads a test_config.json or
// eval_config.json ([Config]: criteria by metric name, custom metrics, the
// user simulator's config);
// [ReadResultFile] and [WriteResultFile] read and write
// *.evalset_result.json files ([SetResult]). Keys may be snake_case or
// camelCase; members Loom does not know are kept in each type's Extra and
// written back; a bad file's error names the file, the case and the field.
// A [Store] keeps an app's sets and results, a [ResultStore] its results:
// [DirStore] keeps both in a directory laid out as ADK lays out an app's,
// package eval/sqleval keeps results in a table of a SQL database, and
// [WithResults] puts the sets of one store with the results of another.
// Package eval/evaltest holds the suite every store runs.
//
// # Metrics
//
// A metric is a [Scorer] built by a [Factory] registered by name in a
// [Registry]. The built-in ones are ADK's: tool trajectory
// ([TrajectoryMetric], exact, in-order or any-order matching), ROUGE-1
// response match ([ResponseMatchMetric], tokenized and stemmed as ADK does
// so scores agree), and those judged by a model: final-response match
// ([JudgedMatchMetric], majority of several verdicts), rubric-based quality
// of final responses, tool use and whole conversations ([RubricMetric],
// [ToolUseRubricMetric], [TrajectoryRubricMetric]), groundedness
// ([HallucinationMetric]), the simulated user's fidelity
// ([SimulatorQualityMetric]), and the metrics ADK computes with Vertex AI's
// evaluation service, which Loom computes with the configured judge
// instead: task success, trajectory and tool use over a conversation
// ([TaskSuccessMetric], [MultiTurnTrajectoryMetric],
// [MultiTurnToolUseMetric]), safety ([SafetyMetric]) and coherence
// ([CoherenceMetric]). A config's custom metric, Python code in ADK, is
// computed by the scorer registered under its name.
//
// # Runs
//
// [Run] runs each case of a set in a new session of a runner.Runner,
// with the case's initial state, its turns in order (or a simulated user's
// turns for a scenario), several cases at a time and each as many times as
// asked; it scores every run and summarizes each case's mean scores
// against the thresholds. Each run's result says what it took
// ([Efficiency]: time, model calls, tokens). Package eval/evaltest runs
// sets from go test.
package eval
