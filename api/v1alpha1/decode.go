package v1alpha1

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The CRD schemas admit only what the Go types decode, but an object stored
// before a schema rule existed, or under a looser copy of the CRD, may hold
// a value they cannot (a duration that overflows, an int32 out of range).
// Decoding such an object into a list fails the whole list, and with it the
// informer every controller reads from: the manager would crash-loop on one
// object. Revisions and ReleaseManagers therefore decode leniently: a spec or
// status that does not decode is left zero, the stored spec is kept and
// written back unchanged, and DecodeError names the value at fault, for the
// controllers to report on the object and leave it alone.

// ErrUndecodable wraps what DecodeError returns.
var ErrUndecodable = errors.New("stored values the Go types cannot hold")

// undecoded is what a lenient decode kept of an object whose spec or status
// did not decode.
// +kubebuilder:object:generate=false
type undecoded struct {
	// spec is the stored spec, as JSON, when it did not decode.
	spec string
	// problems are the values that did not decode (at most one each in
	// spec and status), shared by copies and never changed.
	problems []*field.Error
}

// DeepCopyInto copies u into out. The problems are shared: nothing changes them.
func (u *undecoded) DeepCopyInto(out *undecoded) { *out = *u }

// err is the decode error of the object, or nil.
func (u undecoded) err() error {
	if len(u.problems) == 0 {
		return nil
	}
	msgs := make([]string, len(u.problems))
	for i, p := range u.problems {
		msgs[i] = p.Field + ": " + p.Detail
	}
	return fmt.Errorf("%w: %s", ErrUndecodable, strings.Join(msgs, "; "))
}

// DecodeError says which stored value of the Revision the Go types could not
// hold, such as "spec.targets[0].release.geometricScaling.delay: time:
// invalid duration", or nil when it decoded whole. A Revision with a decode
// error has a zero spec (or status, for a status at fault): Picchu reports
// it on the Revision and does not act on it.
func (r *Revision) DecodeError() error { return r.undecoded.err() }

// UnmarshalJSON decodes a Revision. One whose spec or status does not decode
// still decodes, with DecodeError saying why.
func (r *Revision) UnmarshalJSON(data []byte) error {
	type plain Revision // without these methods
	if err := json.Unmarshal(data, (*plain)(r)); err == nil {
		r.undecoded = undecoded{}
		return nil
	}
	*r = Revision{}
	u, err := decodeParts(data, &r.TypeMeta, &r.ObjectMeta, &r.Spec, &r.Status)
	if err != nil {
		return fmt.Errorf("decoding Revision: %w", err)
	}
	r.undecoded = u
	return nil
}

// MarshalJSON encodes a Revision; a spec that did not decode is written as stored.
func (r Revision) MarshalJSON() ([]byte, error) {
	type plain Revision
	return marshalKeepingSpec(plain(r), r.undecoded)
}

// DecodeError says which stored value of the ReleaseManager the Go types
// could not hold, or nil when it decoded whole. A ReleaseManager with a
// decode error has a zero spec or status: Picchu reports it and does not
// release its app until it is fixed, rather than lose its release record.
func (rm *ReleaseManager) DecodeError() error { return rm.undecoded.err() }

// UnmarshalJSON decodes a ReleaseManager. One whose spec or status does not
// decode still decodes, with DecodeError saying why.
func (rm *ReleaseManager) UnmarshalJSON(data []byte) error {
	type plain ReleaseManager
	if err := json.Unmarshal(data, (*plain)(rm)); err == nil {
		rm.undecoded = undecoded{}
		return nil
	}
	*rm = ReleaseManager{}
	u, err := decodeParts(data, &rm.TypeMeta, &rm.ObjectMeta, &rm.Spec, &rm.Status)
	if err != nil {
		return fmt.Errorf("decoding ReleaseManager: %w", err)
	}
	rm.undecoded = u
	return nil
}

// MarshalJSON encodes a ReleaseManager; a spec that did not decode is written as stored.
func (rm ReleaseManager) MarshalJSON() ([]byte, error) {
	type plain ReleaseManager
	return marshalKeepingSpec(plain(rm), rm.undecoded)
}

// decodeParts decodes an object's type, metadata, spec and status, each on
// its own. A spec or status that does not decode is left zero and named in
// the returned problems; the spec is kept as stored. Only data that is not
// an object with valid metadata (which the API server validates) is an error.
func decodeParts(data []byte, tm *metav1.TypeMeta, om *metav1.ObjectMeta, spec, status any) (undecoded, error) {
	var parts struct {
		metav1.TypeMeta `json:",inline"`
		Metadata        json.RawMessage `json:"metadata"`
		Spec            json.RawMessage `json:"spec"`
		Status          json.RawMessage `json:"status"`
	}
	if err := json.Unmarshal(data, &parts); err != nil {
		return undecoded{}, err
	}
	*tm = parts.TypeMeta
	if len(parts.Metadata) > 0 {
		if err := json.Unmarshal(parts.Metadata, om); err != nil {
			return undecoded{}, fmt.Errorf("metadata: %w", err)
		}
	}
	var u undecoded
	if p := decodePart("spec", parts.Spec, spec); p != nil {
		u.spec = string(parts.Spec)
		u.problems = append(u.problems, p)
	}
	if p := decodePart("status", parts.Status, status); p != nil {
		u.problems = append(u.problems, p)
	}
	return u, nil
}

// decodePart decodes raw into the value into points to. When it does not
// decode, the value is left zero and the problem, naming the value at
// fault under name, is returned.
func decodePart(name string, raw json.RawMessage, into any) *field.Error {
	if len(raw) == 0 {
		return nil
	}
	if err := json.Unmarshal(raw, into); err == nil {
		return nil
	}
	v := reflect.ValueOf(into).Elem()
	v.SetZero()
	path, err := locate(field.NewPath(name), v.Type(), raw)
	return field.Invalid(path, field.OmitValueType{}, err.Error())
}

var unmarshalerType = reflect.TypeFor[json.Unmarshaler]()

// locate returns the path of the innermost value of raw that does not
// decode into type t, and the decoder's error for it, or a nil path when
// raw decodes.
func locate(path *field.Path, t reflect.Type, raw json.RawMessage) (*field.Path, error) {
	err := json.Unmarshal(raw, reflect.New(t).Interface())
	if err == nil {
		return nil, nil
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(unmarshalerType) {
		return path, err
	}
	switch t.Kind() {
	case reflect.Struct:
		var obj map[string]json.RawMessage
		if json.Unmarshal(raw, &obj) == nil {
			if p, e := locateField(path, t, obj); p != nil {
				return p, e
			}
		}
	case reflect.Slice, reflect.Array:
		var items []json.RawMessage
		if json.Unmarshal(raw, &items) == nil {
			for i, item := range items {
				if p, e := locate(path.Index(i), t.Elem(), item); p != nil {
					return p, e
				}
			}
		}
	case reflect.Map:
		var entries map[string]json.RawMessage
		if json.Unmarshal(raw, &entries) == nil {
			for _, k := range slices.Sorted(maps.Keys(entries)) {
				if p, e := locate(path.Key(k), t.Elem(), entries[k]); p != nil {
					return p, e
				}
			}
		}
	}
	return path, err
}

// locateField is locate for the fields of struct type t, whose JSON object is obj.
func locateField(path *field.Path, t reflect.Type, obj map[string]json.RawMessage) (*field.Path, error) {
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || (!f.IsExported() && !f.Anonymous) {
			continue
		}
		if f.Anonymous && name == "" {
			// An embedded struct's fields are the object's own.
			inner := f.Type
			if inner.Kind() == reflect.Pointer {
				inner = inner.Elem()
			}
			if inner.Kind() == reflect.Struct {
				if p, e := locateField(path, inner, obj); p != nil {
					return p, e
				}
				continue
			}
		}
		if name == "" {
			name = f.Name
		}
		if raw, ok := obj[name]; ok {
			if p, e := locate(path.Child(name), f.Type, raw); p != nil {
				return p, e
			}
		}
	}
	return nil, nil
}

// marshalKeepingSpec encodes obj, with the stored spec in place of its
// zero spec when u kept one.
func marshalKeepingSpec(obj any, u undecoded) ([]byte, error) {
	b, err := json.Marshal(obj)
	if err != nil || u.spec == "" {
		return b, err
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(b, &fields); err != nil {
		return nil, err
	}
	fields["spec"] = json.RawMessage(u.spec)
	return json.Marshal(fields)
}
