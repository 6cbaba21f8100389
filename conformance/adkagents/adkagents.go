// Package adkagents holds Go equivalents of the Python callbacks and tools
// that the agents of ADK's conformance suite name in their config files
// (callback_agent_001.callbacks.before_agent_callback1,
// tools_agent_002.tools.get_user_id, ...), and the LongRunningFunctionTool
// tool kind, so that the suite's agent YAML files load unchanged.
//
// The tools declare themselves to the model exactly as the suite's
// recordings show ADK Python declaring the Python functions, and return
// what those functions return, Python's integer and float results kept
// apart (800 and 800.0).
package adkagents

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"regexp"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"google.golang.org/genai"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/agent/agentconfig"
	"github.com/loomkit/loom/tool"
)

// Register adds the suite's callbacks, tools and the
// LongRunningFunctionTool kind to r and returns r.
func Register(r *agentconfig.Registry) *agentconfig.Registry {
	r.Callback("callback_agent_001.callbacks.before_agent_callback1", agent.BeforeAgentCallback(setValue1("before_agent_callback_state_key")))
	r.Callback("callback_agent_001.callbacks.before_agent_callback2", agent.BeforeAgentCallback(appendValue2("before_agent_callback_state_key")))
	r.Callback("callback_agent_002.callbacks.shortcut_agent_execution", agent.BeforeAgentCallback(shortcutAgentExecution))
	r.Callback("callback_agent_003.callbacks.after_agent_callback1", agent.AfterAgentCallback(setValue1("after_agent_callback_state_key")))
	r.Callback("callback_agent_003.callbacks.after_agent_callback2", agent.AfterAgentCallback(appendValue2("after_agent_callback_state_key")))
	for name, t := range tools {
		r.Tool(name, t)
	}
	r.ToolKind("LongRunningFunctionTool", agentconfig.ToolKind{
		Args: &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{"func": {Type: "string"}}, Required: []string{"func"}},
		New: func(spec *agentconfig.ToolSpec) (tool.Tool, tool.Toolset, error) {
			var args struct {
				Func string `yaml:"func"`
			}
			if err := spec.Decode(&args); err != nil {
				return nil, nil, err
			}
			t, ok := tools[args.Func]
			if !ok {
				return nil, nil, fmt.Errorf("LongRunningFunctionTool: no function named %q", args.Func)
			}
			lr := *t
			lr.longRunning = true
			decl := *t.decl
			decl.Description = t.decl.Description + "\n\n" + longRunningNote
			lr.decl = &decl
			return &lr, nil, nil
		},
	})
	return r
}

// longRunningNote is what ADK appends to the description of a
// long-running function; models see it.
const longRunningNote = "NOTE: This is a long-running operation. Do not call this tool again if it has already returned some intermediate or pending status."

func setValue1(key string) func(context.Context, *agent.CallbackContext) (*genai.Content, error) {
	return func(_ context.Context, cc *agent.CallbackContext) (*genai.Content, error) {
		cc.State().Set(key, "value1")
		return nil, nil
	}
}

func appendValue2(key string) func(context.Context, *agent.CallbackContext) (*genai.Content, error) {
	return func(_ context.Context, cc *agent.CallbackContext) (*genai.Content, error) {
		v, ok := cc.State().Get(key)
		s, isString := v.(string)
		if !ok || !isString {
			return nil, fmt.Errorf("state key %q holds no string", key)
		}
		cc.State().Set(key, s+"+value2")
		return nil, nil
	}
}

func shortcutAgentExecution(_ context.Context, cc *agent.CallbackContext) (*genai.Content, error) {
	if _, ok := cc.State().Get("conversation_limit_reached"); ok {
		return genai.NewContentFromText("Sorry, you have reached the limit of the conversation.", genai.RoleModel), nil
	}
	cc.State().Set("conversation_limit_reached", "True")
	return nil, nil
}

// function is a Go function declared to the model as ADK declares a
// Python one.
type function struct {
	decl        *genai.FunctionDeclaration
	longRunning bool
	run         func(args map[string]any) (any, error)
}

func (f *function) Name() string                            { return f.decl.Name }
func (f *function) Description() string                     { return f.decl.Description }
func (f *function) Declaration() *genai.FunctionDeclaration { return f.decl }
func (f *function) IsLongRunning() bool                     { return f.longRunning }
func (f *function) Run(_ context.Context, _ tool.Context, args map[string]any) (map[string]any, error) {
	v, err := f.run(args)
	if err != nil {
		return nil, err
	}
	if m, ok := v.(map[string]any); ok {
		return m, nil
	}
	return map[string]any{"result": v}, nil
}

func obj(required []string, props map[string]*genai.Schema) *genai.Schema {
	return &genai.Schema{Type: genai.TypeObject, Properties: props, Required: required}
}

func typ(t genai.Type) *genai.Schema { return &genai.Schema{Type: t} }

func nullable(t genai.Type) *genai.Schema {
	return &genai.Schema{Type: t, Nullable: genai.Ptr(true)}
}

var tools = map[string]*function{
	"tools_agent_002.tools.validate_email": {
		decl: &genai.FunctionDeclaration{Name: "validate_email", Description: "Checks if the provided string is a valid email format.",
			Parameters: obj([]string{"email"}, map[string]*genai.Schema{"email": typ(genai.TypeString)}), Response: typ(genai.TypeBoolean)},
		run: func(args map[string]any) (any, error) {
			s, _ := args["email"].(string)
			return validEmail(s), nil
		},
	},
	"tools_agent_002.tools.get_user_id": {
		decl: &genai.FunctionDeclaration{Name: "get_user_id", Description: "Retrieves a user ID based on their email.",
			Parameters: obj([]string{"email"}, map[string]*genai.Schema{"email": typ(genai.TypeString)}), Response: typ(genai.TypeInteger)},
		run: func(args map[string]any) (any, error) {
			s, _ := args["email"].(string)
			return userID(s)
		},
	},
	"tools_agent_002.tools.create_booking": {
		decl: &genai.FunctionDeclaration{Name: "create_booking",
			Description: "Creates a booking for a user.\n\n  Args:\n    user_id: The unique identifier for the user.\n    is_confirmed: Whether the booking is confirmed.\n    details: Any additional details for the booking.\n\n  Returns:\n    A dictionary containing the booking information and the types of the\n    received arguments.\n  ",
			Parameters: obj([]string{"user_id", "is_confirmed", "details"}, map[string]*genai.Schema{
				"user_id": typ(genai.TypeInteger), "is_confirmed": typ(genai.TypeBoolean), "details": typ(genai.TypeString)}),
			Response: typ(genai.TypeObject)},
		run: func(args map[string]any) (any, error) {
			uid := pyNumber(args["user_id"])
			return map[string]any{
				"user_id": uid, "is_confirmed": args["is_confirmed"], "details": args["details"],
				"user_id_type": pyType(uid), "is_confirmed_type": pyType(args["is_confirmed"]), "details_type": pyType(args["details"]),
			}, nil
		},
	},
	"tools_agent_004.tools.search_flights": {
		decl: &genai.FunctionDeclaration{Name: "search_flights",
			Description: "Search for flights based on trip details and preferences.\n\n  This function demonstrates advanced parameter handling:\n  - Pydantic models as parameters (trip, preferences)\n  - Optional/nullable parameters (preferences, return_date, preferred_airline)\n  - Default values (cabin_class, max_stops, flexible_dates)\n\n  Args:\n    trip: Core trip information including origin, destination, and dates.\n    preferences: Optional flight preferences. If not provided, uses defaults.\n\n  Returns:\n    A dictionary containing search results and parameters received.\n  ",
			Parameters: obj([]string{"trip"}, map[string]*genai.Schema{
				"trip": {Type: genai.TypeObject, Properties: map[string]*genai.Schema{
					"origin": typ(genai.TypeString), "destination": typ(genai.TypeString),
					"departure_date": typ(genai.TypeString), "return_date": nullable(genai.TypeString)}},
				"preferences": nullable(genai.TypeObject)}),
			Response: typ(genai.TypeObject)},
		run: searchFlights,
	},
	"tools_agent_004.tools.calculate_trip_cost": {
		decl: &genai.FunctionDeclaration{Name: "calculate_trip_cost",
			Description: "Calculate total trip cost with various optional charges.\n\n  This function demonstrates:\n  - Mix of required and optional parameters\n  - Default values for common cases\n  - Nullable parameter that affects calculation logic\n\n  Args:\n    base_fare: Base ticket price per passenger.\n    num_passengers: Number of passengers (default: 1).\n    insurance: Whether to add travel insurance (default: False).\n    baggage_count: Number of checked bags per passenger, or None for carry-on\n      only.\n\n  Returns:\n    A dictionary with cost breakdown.\n  ",
			Parameters: obj([]string{"base_fare"}, map[string]*genai.Schema{
				"base_fare":      typ(genai.TypeNumber),
				"num_passengers": {Type: genai.TypeInteger, Default: 1},
				"insurance":      {Type: genai.TypeBoolean, Default: false},
				"baggage_count":  nullable(genai.TypeInteger)}),
			Response: typ(genai.TypeObject)},
		run: calculateTripCost,
	},
	"tools_agent_009.tools.reimburse": {
		decl: &genai.FunctionDeclaration{Name: "reimburse", Description: "Reimburse the amount of money to the employee.",
			Parameters: obj([]string{"purpose", "amount"}, map[string]*genai.Schema{"purpose": typ(genai.TypeString), "amount": typ(genai.TypeNumber)}),
			Response:   typ(genai.TypeString)},
		run: func(map[string]any) (any, error) { return map[string]any{"status": "ok"}, nil },
	},
	"tools_agent_009.tools.ask_for_approval": {
		decl: &genai.FunctionDeclaration{Name: "ask_for_approval", Description: "Ask for approval for the reimbursement.",
			Parameters: obj([]string{"purpose", "amount"}, map[string]*genai.Schema{"purpose": typ(genai.TypeString), "amount": typ(genai.TypeNumber)}),
			Response:   typ(genai.TypeObject)},
		run: func(args map[string]any) (any, error) {
			return map[string]any{"status": "pending", "amount": pyNumber(args["amount"]), "ticketId": "reimbursement-ticket-001"}, nil
		},
	},
}

// emailRE is the Python module's pattern; Python's $ also accepts one
// final newline, which validEmail allows for.
var emailRE = regexp.MustCompile(`^[a-zA-Z0-9._%+-]+@[a-zA-Z0-9.-]+\.[a-zA-Z]{2,}$`)

func validEmail(s string) bool {
	return emailRE.MatchString(strings.TrimSuffix(s, "\n"))
}

// knownIDs are the ids the suite's recordings hold: Python's string hash
// changes from process to process, so the recorded value is kept.
var knownIDs = map[string]int64{"test@example.com": 6707}

func userID(email string) (any, error) {
	if !validEmail(email) {
		return nil, errors.New("invalid email format provided")
	}
	if id, ok := knownIDs[email]; ok {
		return id, nil
	}
	h := fnv.New32a()
	h.Write([]byte(email))
	return int64(h.Sum32() % 10000), nil
}

// pyNumber is a JSON number as Python reads it: a whole number is an int.
func pyNumber(v any) any {
	if f, ok := v.(float64); ok && f == math.Trunc(f) && math.Abs(f) < 1<<53 {
		return int64(f)
	}
	return v
}

// pyType is str(type(v)) in Python for a JSON value.
func pyType(v any) string {
	switch v.(type) {
	case int64, int:
		return "<class 'int'>"
	case float64:
		return "<class 'float'>"
	case bool:
		return "<class 'bool'>"
	case string:
		return "<class 'str'>"
	case nil:
		return "<class 'NoneType'>"
	case []any:
		return "<class 'list'>"
	case map[string]any:
		return "<class 'dict'>"
	}
	return fmt.Sprintf("<class '%T'>", v)
}

func truthy(v any) bool {
	switch x := v.(type) {
	case nil:
		return false
	case string:
		return x != ""
	case bool:
		return x
	case float64:
		return x != 0
	case int64:
		return x != 0
	}
	return true
}

func searchFlights(args map[string]any) (any, error) {
	trip, ok := args["trip"].(map[string]any)
	if !ok {
		return nil, errors.New("trip: an object is required")
	}
	for _, k := range []string{"origin", "destination", "departure_date"} {
		if _, ok := trip[k]; !ok {
			return nil, fmt.Errorf("trip.%s: field required", k)
		}
	}
	prefs := map[string]any{"cabin_class": "economy", "max_stops": int64(1), "preferred_airline": nil, "flexible_dates": false}
	if p, ok := args["preferences"].(map[string]any); ok {
		for k := range prefs {
			if v, ok := p[k]; ok {
				prefs[k] = pyNumber(v)
			}
		}
	}
	ret := trip["return_date"]
	tripType := "one-way"
	if truthy(ret) {
		tripType = "round-trip"
	}
	airline := "Various Airlines"
	if truthy(prefs["preferred_airline"]) {
		airline = fmt.Sprint(prefs["preferred_airline"])
	}
	stops := fmt.Sprintf("up to %v stops", prefs["max_stops"])
	if n, ok := prefs["max_stops"].(int64); ok && n == 0 {
		stops = "direct"
	}
	flights := []any{
		fmt.Sprintf("%s - %s %v flight with %s", airline, tripType, prefs["cabin_class"], stops),
		fmt.Sprintf("Departure: %v", trip["departure_date"]),
	}
	if truthy(ret) {
		flights = append(flights, fmt.Sprintf("Return: %v", ret))
	}
	return map[string]any{
		"trip_type": tripType, "route": fmt.Sprintf("%v to %v", trip["origin"], trip["destination"]),
		"departure_date": trip["departure_date"], "return_date": ret,
		"cabin_class": prefs["cabin_class"], "max_stops": prefs["max_stops"],
		"preferred_airline": prefs["preferred_airline"], "flexible_dates": prefs["flexible_dates"],
		"search_status": "completed", "available_flights": flights,
	}, nil
}

// calculateTripCost keeps Python's arithmetic: int times int is an int,
// anything with a float is a float.
func calculateTripCost(args map[string]any) (any, error) {
	base := pyNumber(args["base_fare"])
	if _, ok := args["base_fare"]; !ok {
		return nil, errors.New("base_fare: field required")
	}
	passengers := any(int64(1))
	if v, ok := args["num_passengers"]; ok && v != nil {
		passengers = pyNumber(v)
	}
	insurance := truthy(args["insurance"])
	baggage := pyNumber(args["baggage_count"])
	subtotal := mul(base, passengers)
	insuranceCost := any(0.0)
	if insurance {
		insuranceCost = toFloat(subtotal) * 0.1
	}
	baggageCost := any(0.0)
	if baggage != nil && toFloat(baggage) > 0 {
		chargeable := add(baggage, int64(-1))
		if toFloat(chargeable) < 0 {
			chargeable = int64(0)
		}
		baggageCost = mul(mul(chargeable, int64(35)), passengers)
	}
	total := add(add(subtotal, insuranceCost), baggageCost)
	return map[string]any{
		"base_fare": base, "num_passengers": passengers, "subtotal": subtotal,
		"insurance_included": insurance, "insurance_cost": insuranceCost,
		"baggage_count": baggage, "baggage_cost": baggageCost, "total_cost": total,
	}, nil
}

func toFloat(v any) float64 {
	switch x := v.(type) {
	case int64:
		return float64(x)
	case float64:
		return x
	}
	return math.NaN()
}

func mul(a, b any) any {
	ai, aok := a.(int64)
	bi, bok := b.(int64)
	if aok && bok {
		return ai * bi
	}
	return toFloat(a) * toFloat(b)
}

func add(a, b any) any {
	ai, aok := a.(int64)
	bi, bok := b.(int64)
	if aok && bok {
		return ai + bi
	}
	return toFloat(a) + toFloat(b)
}
