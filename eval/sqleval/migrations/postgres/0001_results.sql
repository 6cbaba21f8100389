-- Eval results: one row per saved result of an app's eval run, the result
-- as ADK's JSON (snake_case keys) in data.
CREATE TABLE eval_results (
	app_name TEXT NOT NULL,
	id       TEXT NOT NULL,
	data     TEXT NOT NULL,
	PRIMARY KEY (app_name, id)
);
