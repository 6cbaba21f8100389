package adkagents

import (
	"encoding/json"
	"reflect"
	"testing"
)

// jsonArgs decodes args as the model's JSON arrives: numbers are float64.
func jsonArgs(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func call(t *testing.T, name, args string) map[string]any {
	t.Helper()
	out, err := tools[name].Run(t.Context(), nil, jsonArgs(t, args))
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestRecordedResults checks the tools' results against the values the
// suite's recordings hold, integer and float kinds included.
func TestRecordedResults(t *testing.T) {
	if got := call(t, "tools_agent_002.tools.get_user_id", `{"email":"test@example.com"}`); got["result"] != int64(6707) {
		t.Errorf("get_user_id = %#v, want {result: 6707}", got)
	}
	if got := call(t, "tools_agent_002.tools.validate_email", `{"email":"test@example.com"}`); got["result"] != true {
		t.Errorf("validate_email = %#v", got)
	}
	if _, err := tools["tools_agent_002.tools.get_user_id"].Run(t.Context(), nil, map[string]any{"email": "nope"}); err == nil {
		t.Error("get_user_id of an invalid email did not fail")
	}
	booking := call(t, "tools_agent_002.tools.create_booking", `{"user_id":6707,"is_confirmed":true,"details":"Conformance Test"}`)
	want := map[string]any{"user_id": int64(6707), "is_confirmed": true, "details": "Conformance Test",
		"user_id_type": "<class 'int'>", "is_confirmed_type": "<class 'bool'>", "details_type": "<class 'str'>"}
	if !reflect.DeepEqual(booking, want) {
		t.Errorf("create_booking = %#v, want %#v", booking, want)
	}
	cost := call(t, "tools_agent_004.tools.calculate_trip_cost", `{"base_fare":800,"num_passengers":1}`)
	if cost["subtotal"] != int64(800) || cost["insurance_cost"] != 0.0 || cost["baggage_cost"] != 0.0 || cost["total_cost"] != 800.0 {
		t.Errorf("calculate_trip_cost(800) = %#v", cost)
	}
	cost = call(t, "tools_agent_004.tools.calculate_trip_cost", `{"base_fare":1200,"num_passengers":2,"baggage_count":2,"insurance":true}`)
	if cost["subtotal"] != int64(2400) || cost["insurance_cost"] != 240.0 || cost["baggage_cost"] != int64(70) || cost["total_cost"] != 2710.0 {
		t.Errorf("calculate_trip_cost(1200×2) = %#v", cost)
	}
	flights := call(t, "tools_agent_004.tools.search_flights",
		`{"trip":{"origin":"SF","destination":"Tokyo","departure_date":"March 15","return_date":"March 25"},"preferences":{"max_stops":0,"cabin_class":"Business"}}`)
	wantFlights := []any{"Various Airlines - round-trip Business flight with direct", "Departure: March 15", "Return: March 25"}
	if !reflect.DeepEqual(flights["available_flights"], wantFlights) || flights["preferred_airline"] != nil || flights["flexible_dates"] != false {
		t.Errorf("search_flights = %#v", flights)
	}
	approval := call(t, "tools_agent_009.tools.ask_for_approval", `{"purpose":"hotel and flight","amount":2000}`)
	if approval["amount"] != int64(2000) || approval["ticketId"] != "reimbursement-ticket-001" || approval["status"] != "pending" {
		t.Errorf("ask_for_approval = %#v", approval)
	}
}
