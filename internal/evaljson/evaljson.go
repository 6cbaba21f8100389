// Package evaljson is the JSON codec of ADK's eval documents: keys in
// snake_case (files) or camelCase (ADK's HTTP API), either accepted on
// input; genai values in either spelling; the members a type does not name
// kept in its Extra field and written back; decoding errors located at a
// field. Package eval's types and the server's eval routes use it.
package evaljson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"

	"google.golang.org/genai"

	"github.com/loomkit/loom/event"
)

// Extra holds the members of a JSON object that its Go type does not name.
// They are kept as read and written back, so a file survives a round trip
// through Loom even when it carries fields Loom does not know.
type Extra map[string]json.RawMessage

// FieldError is a decoding error located at a field of a document, such as
// eval_cases[2].conversation[0].user_content.
type FieldError struct {
	// Path is the location of the field, in the document's own key names.
	Path string
	// Err is what is wrong with it.
	Err error
}

// Error gives the path and the problem.
func (e *FieldError) Error() string {
	if e.Path == "" {
		return e.Err.Error()
	}
	return e.Path + ": " + e.Err.Error()
}

// Unwrap returns the problem.
func (e *FieldError) Unwrap() error { return e.Err }

// The codec handles the structs with an Extra field. Their fields name
// their snake_case key in the json tag; "omitempty" drops a zero value; an
// `eval:"required"` tag makes a missing key an error. Other values are
// left to encoding/json.

type fieldInfo struct {
	index     int
	snake     string
	camel     string
	omitEmpty bool
	required  bool
}

type structInfo struct {
	fields []fieldInfo
	extra  int // index of the Extra field, or -1
}

var (
	infoCache sync.Map // reflect.Type -> *structInfo
	extraType = reflect.TypeFor[Extra]()
	rawType   = reflect.TypeFor[json.RawMessage]()
	genaiPkg  = reflect.TypeFor[genai.Content]().PkgPath()

	// numbers and labels are filled in by RegisterNumber and RegisterLabel
	// from package initialization, before any use.
	numbers = map[reflect.Type]numberForm{}
	labels  = map[reflect.Type]labelForm{}
)

// numberForm reads and writes a type that JSON may also give as a bare
// number.
type numberForm struct {
	from func(rv reflect.Value, f float64) // rv is addressable
	as   func(rv reflect.Value) (float64, bool)
}

// labelForm names the items of a type in error paths.
type labelForm struct {
	kind string
	keys []string
}

// RegisterNumber lets JSON give a T as a bare number: decoding a number
// calls from, and encoding writes as's number when it reports one. Call it
// from package initialization.
func RegisterNumber[T any](from func(*T, float64), as func(*T) (float64, bool)) {
	numbers[reflect.TypeFor[T]()] = numberForm{
		from: func(rv reflect.Value, f float64) { from(rv.Addr().Interface().(*T), f) },
		as: func(rv reflect.Value) (float64, bool) {
			v := rv.Interface().(T)
			return as(&v)
		},
	}
}

// RegisterLabel names the items of a list of T (or *T) in the paths of
// decoding errors by the first of keys they have: " (kind "id")". Call it
// from package initialization.
func RegisterLabel[T any](kind string, keys ...string) {
	labels[reflect.TypeFor[T]()] = labelForm{kind, keys}
}

// codecStruct reports whether t is a struct the codec handles itself: one
// with an Extra field.
func codecStruct(t reflect.Type) (*structInfo, bool) {
	if t.Kind() != reflect.Struct {
		return nil, false
	}
	if v, ok := infoCache.Load(t); ok {
		si := v.(*structInfo)
		return si, si.extra >= 0
	}
	si := &structInfo{extra: -1}
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		if f.Type == extraType {
			si.extra = i
			continue
		}
		tag := f.Tag.Get("json")
		if tag == "-" || tag == "" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		si.fields = append(si.fields, fieldInfo{
			index:     i,
			snake:     name,
			camel:     event.CamelCase(name),
			omitEmpty: strings.Contains(opts, "omitempty"),
			required:  f.Tag.Get("eval") == "required",
		})
	}
	infoCache.Store(t, si)
	return si, si.extra >= 0
}

// Decode reads data, in either key style, into v, a pointer.
func Decode(data []byte, v any) error {
	return decodeValue(data, reflect.ValueOf(v).Elem(), "")
}

// IsNull reports whether raw is the JSON null.
func IsNull(raw []byte) bool {
	return string(bytes.TrimSpace(raw)) == "null"
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func decodeValue(raw []byte, rv reflect.Value, path string) error {
	if IsNull(raw) {
		rv.SetZero()
		return nil
	}
	t := rv.Type()
	if nf, ok := numbers[t]; ok && rv.CanAddr() {
		var f float64
		if json.Unmarshal(raw, &f) == nil {
			nf.from(rv, f)
			return nil
		}
	}
	switch {
	case t.Kind() == reflect.Pointer:
		p := reflect.New(t.Elem())
		if err := decodeValue(raw, p.Elem(), path); err != nil {
			return err
		}
		rv.Set(p)
		return nil
	case t == rawType:
		rv.SetBytes(slices.Clone(raw))
		return nil
	case t.Kind() == reflect.Slice && t.Elem().Kind() != reflect.Uint8:
		var items []json.RawMessage
		if err := json.Unmarshal(raw, &items); err != nil {
			return &FieldError{path, errors.New("expected a list")}
		}
		s := reflect.MakeSlice(t, len(items), len(items))
		for i, item := range items {
			if err := decodeValue(item, s.Index(i), path+"["+strconv.Itoa(i)+"]"+label(t.Elem(), item)); err != nil {
				return err
			}
		}
		rv.Set(s)
		return nil
	case t.Kind() == reflect.Map && t.Key().Kind() == reflect.String && needsCodec(t.Elem()):
		var items map[string]json.RawMessage
		if err := json.Unmarshal(raw, &items); err != nil {
			return &FieldError{path, errors.New("expected an object")}
		}
		m := reflect.MakeMapWithSize(t, len(items))
		for k, item := range items {
			ev := reflect.New(t.Elem()).Elem()
			if err := decodeValue(item, ev, join(path, k)); err != nil {
				return err
			}
			m.SetMapIndex(reflect.ValueOf(k).Convert(t.Key()), ev)
		}
		rv.Set(m)
		return nil
	}
	if si, ok := codecStruct(t); ok {
		return decodeStruct(raw, rv, si, path)
	}
	if t.PkgPath() == genaiPkg {
		norm, err := event.Normalize(raw)
		if err == nil {
			raw = norm
		}
	}
	if err := json.Unmarshal(raw, rv.Addr().Interface()); err != nil {
		return &FieldError{path, Simplify(err)}
	}
	return nil
}

// label names a list item by its id in error paths (see RegisterLabel).
func label(t reflect.Type, raw []byte) string {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	lf, ok := labels[t]
	if !ok {
		return ""
	}
	var members map[string]json.RawMessage
	if json.Unmarshal(raw, &members) != nil {
		return ""
	}
	for _, k := range lf.keys {
		var id string
		if json.Unmarshal(members[k], &id) == nil && id != "" {
			return " (" + lf.kind + " " + strconv.Quote(id) + ")"
		}
	}
	return ""
}

// Simplify drops the Go type names from an error of encoding/json.
func Simplify(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Errorf("expected %s, got %s", jsonKind(te.Type), te.Value)
	}
	return err
}

func jsonKind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Float32, reflect.Float64, reflect.Int, reflect.Int32, reflect.Int64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "a list"
	}
	return "an object"
}

func needsCodec(t reflect.Type) bool {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	_, ok := codecStruct(t)
	return ok
}

func decodeStruct(raw []byte, rv reflect.Value, si *structInfo, path string) error {
	var members map[string]json.RawMessage
	if err := json.Unmarshal(raw, &members); err != nil || members == nil {
		return &FieldError{path, errors.New("expected an object")}
	}
	for _, f := range si.fields {
		key := f.snake
		v, ok := members[key]
		if !ok && f.camel != f.snake {
			key = f.camel
			v, ok = members[key]
		}
		if !ok {
			if f.required {
				return &FieldError{join(path, f.snake), errors.New("missing")}
			}
			continue
		}
		delete(members, key)
		if err := decodeValue(v, rv.Field(f.index), join(path, key)); err != nil {
			return err
		}
	}
	if len(members) > 0 {
		rv.Field(si.extra).Set(reflect.ValueOf(Extra(members)))
	}
	return nil
}

// Encode writes v in ADK's JSON: snake_case keys, or camelCase ones when
// camel is set.
func Encode(v any, camel bool) ([]byte, error) {
	var b bytes.Buffer
	if err := encodeValue(&b, reflect.ValueOf(v), camel); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// encodeValue writes rv's JSON form: the eval file format's, with camelCase
// keys when camel is set, snake_case otherwise.
func encodeValue(b *bytes.Buffer, rv reflect.Value, camel bool) error {
	if !rv.IsValid() {
		b.WriteString("null")
		return nil
	}
	t := rv.Type()
	if nf, ok := numbers[t]; ok {
		if f, ok := nf.as(rv); ok {
			return writeJSON(b, f)
		}
	}
	switch {
	case t.Kind() == reflect.Pointer || t.Kind() == reflect.Interface:
		if rv.IsNil() {
			b.WriteString("null")
			return nil
		}
		return encodeValue(b, rv.Elem(), camel)
	case t == rawType:
		if rv.Len() == 0 {
			b.WriteString("null")
			return nil
		}
		b.Write(rv.Bytes())
		return nil
	case t.Kind() == reflect.Slice && t.Elem().Kind() != reflect.Uint8:
		return encodeSlice(b, rv, camel)
	case t.Kind() == reflect.Map && t.Key().Kind() == reflect.String && needsCodec(t.Elem()):
		return encodeMap(b, rv, camel)
	}
	si, ok := codecStruct(t)
	if !ok {
		return writeJSON(b, rv.Interface())
	}
	return encodeStruct(b, rv, si, camel)
}

// encodeSlice writes a list.
func encodeSlice(b *bytes.Buffer, rv reflect.Value, camel bool) error {
	b.WriteByte('[')
	for i := range rv.Len() {
		if i > 0 {
			b.WriteByte(',')
		}
		if err := encodeValue(b, rv.Index(i), camel); err != nil {
			return err
		}
	}
	b.WriteByte(']')
	return nil
}

// encodeMap writes a map with string keys, its keys sorted.
func encodeMap(b *bytes.Buffer, rv reflect.Value, camel bool) error {
	t := rv.Type()
	if rv.IsNil() {
		b.WriteString("null")
		return nil
	}
	keys := make([]string, 0, rv.Len())
	for _, k := range rv.MapKeys() {
		keys = append(keys, k.String())
	}
	slices.Sort(keys)
	b.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		writeJSON(b, k)
		b.WriteByte(':')
		if err := encodeValue(b, rv.MapIndex(reflect.ValueOf(k).Convert(t.Key())), camel); err != nil {
			return err
		}
	}
	b.WriteByte('}')
	return nil
}

// encodeStruct writes a struct of the eval format: its fields (an empty list
// for a nil slice), then its extra members, sorted.
func encodeStruct(b *bytes.Buffer, rv reflect.Value, si *structInfo, camel bool) error {
	b.WriteByte('{')
	n := 0
	member := func(k string) {
		if n > 0 {
			b.WriteByte(',')
		}
		n++
		writeJSON(b, k)
		b.WriteByte(':')
	}
	for _, f := range si.fields {
		fv := rv.Field(f.index)
		if f.omitEmpty && fv.IsZero() {
			continue
		}
		key := f.snake
		if camel {
			key = f.camel
		}
		member(key)
		if fv.Kind() == reflect.Slice && fv.IsNil() && fv.Type() != rawType {
			b.WriteString("[]")
			continue
		}
		if err := encodeValue(b, fv, camel); err != nil {
			return err
		}
	}
	extra := rv.Field(si.extra).Interface().(Extra)
	keys := make([]string, 0, len(extra))
	for k := range extra {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		member(k)
		b.Write(extra[k])
	}
	b.WriteByte('}')
	return nil
}

func writeJSON(b *bytes.Buffer, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	b.Write(data)
	return nil
}

// EncodeCamel writes v in the camelCase form of ADK's HTTP API.
func EncodeCamel(v any) ([]byte, error) { return Encode(v, true) }

// Indent pretty-prints JSON for files, with a final newline; data that is
// not JSON is returned as it is.
func Indent(data []byte) []byte {
	var b bytes.Buffer
	if json.Indent(&b, data, "", "  ") != nil {
		return data
	}
	b.WriteByte('\n')
	return b.Bytes()
}
