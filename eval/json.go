package eval

import "github.com/loomkit/loom/internal/evaljson"

// The JSON methods of the documents. Files use snake_case keys, as ADK
// writes them; either key style is read. The server's eval routes write
// the camelCase form of ADK's HTTP API with the same codec.

// Extra holds the members of a JSON object that its Go type does not name.
// They are kept as read and written back, so a file survives a round trip
// through Loom even when it carries fields Loom does not know.
type Extra = evaljson.Extra

// FieldError is a decoding error located at a field of a document, such as
// eval_cases[2].conversation[0].user_content: its Path, in the document's
// own key names, and its Err.
type FieldError = evaljson.FieldError

func init() {
	// A criterion may be given as its bare threshold.
	evaljson.RegisterNumber(func(c *Criterion, f float64) { c.fromNumber(f) }, (*Criterion).asNumber)
	// Errors name a case of a list by its id.
	evaljson.RegisterLabel[Case]("eval case", "eval_id", "evalId")
}

func encode(v any) ([]byte, error)    { return evaljson.Encode(v, false) }
func decode(data []byte, v any) error { return evaljson.Decode(data, v) }
func indent(data []byte) []byte       { return evaljson.Indent(data) }

// MarshalJSON writes the eval set with snake_case keys.
func (s *Set) MarshalJSON() ([]byte, error) { return encode(s) }

// UnmarshalJSON reads an eval set in either key style.
func (s *Set) UnmarshalJSON(data []byte) error { return decode(data, (*setAlias)(s)) }

// MarshalJSON writes the eval case with snake_case keys.
func (c *Case) MarshalJSON() ([]byte, error) { return encode(c) }

// UnmarshalJSON reads an eval case in either key style.
func (c *Case) UnmarshalJSON(data []byte) error { return decode(data, (*caseAlias)(c)) }

// MarshalJSON writes the result with snake_case keys.
func (r *SetResult) MarshalJSON() ([]byte, error) { return encode(r) }

// UnmarshalJSON reads a result in either key style.
func (r *SetResult) UnmarshalJSON(data []byte) error { return decode(data, (*setResultAlias)(r)) }

// MarshalJSON writes the config with snake_case keys.
func (c *Config) MarshalJSON() ([]byte, error) { return encode(c) }

// UnmarshalJSON reads a config in either key style.
func (c *Config) UnmarshalJSON(data []byte) error { return decode(data, (*configAlias)(c)) }

// MarshalJSON writes the metric with snake_case keys.
func (m *Metric) MarshalJSON() ([]byte, error) { return encode(m) }

// UnmarshalJSON reads a metric in either key style.
func (m *Metric) UnmarshalJSON(data []byte) error { return decode(data, (*metricAlias)(m)) }

type (
	setAlias       Set
	caseAlias      Case
	setResultAlias SetResult
	configAlias    Config
	metricAlias    Metric
)
