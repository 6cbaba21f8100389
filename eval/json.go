package eval

// The JSON methods of the documents. Files use snake_case keys, as ADK
// writes them; [MarshalCamel] gives the camelCase form of ADK's HTTP API.
// Either form is read.

// MarshalJSON writes the eval set with snake_case keys.
func (s *Set) MarshalJSON() ([]byte, error) { return encode(s, false) }

// UnmarshalJSON reads an eval set in either key style.
func (s *Set) UnmarshalJSON(data []byte) error { return decode(data, (*setAlias)(s)) }

// MarshalJSON writes the eval case with snake_case keys.
func (c *Case) MarshalJSON() ([]byte, error) { return encode(c, false) }

// UnmarshalJSON reads an eval case in either key style.
func (c *Case) UnmarshalJSON(data []byte) error { return decode(data, (*caseAlias)(c)) }

// MarshalJSON writes the result with snake_case keys.
func (r *SetResult) MarshalJSON() ([]byte, error) { return encode(r, false) }

// UnmarshalJSON reads a result in either key style.
func (r *SetResult) UnmarshalJSON(data []byte) error { return decode(data, (*setResultAlias)(r)) }

// MarshalJSON writes the config with snake_case keys.
func (c *Config) MarshalJSON() ([]byte, error) { return encode(c, false) }

// UnmarshalJSON reads a config in either key style.
func (c *Config) UnmarshalJSON(data []byte) error { return decode(data, (*configAlias)(c)) }

// MarshalJSON writes the metric with snake_case keys.
func (m *Metric) MarshalJSON() ([]byte, error) { return encode(m, false) }

// UnmarshalJSON reads a metric in either key style.
func (m *Metric) UnmarshalJSON(data []byte) error { return decode(data, (*metricAlias)(m)) }

type (
	setAlias       Set
	caseAlias      Case
	setResultAlias SetResult
	configAlias    Config
	metricAlias    Metric
)

// MarshalCamel writes an eval document (a *Set, *Case, *SetResult,
// *CaseResult or any value holding them) with camelCase keys, as ADK's
// HTTP API does.
func MarshalCamel(v any) ([]byte, error) { return encode(v, true) }

// Unmarshal reads an eval document in either key style into v, a pointer.
func Unmarshal(data []byte, v any) error { return decode(data, v) }
