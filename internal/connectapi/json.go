package connectapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// jsonCodecs replace Connect's JSON codec, under both names a JSON request
// may carry.
//
// Connect's own decodes with protojson's DiscardUnknown, which ignores
// unknown fields (good: a newer client may send fields this server does
// not know) but also drops enum values it does not know by name without a
// word, so {"states":["NOPE"]} listed every job instead of failing. This
// one refuses an unknown enum name and still ignores unknown fields.
func jsonCodecs() connect.HandlerOption {
	return connect.WithHandlerOptions(
		connect.WithCodec(jsonCodec{"json"}),
		connect.WithCodec(jsonCodec{"json; charset=utf-8"}),
	)
}

type jsonCodec struct{ name string }

func (c jsonCodec) Name() string { return c.name }

// Marshal writes a message's JSON. JSON has no place for unknown fields, so
// a message holding some (a stored event passed on undecoded: see
// eventResponse) is decoded into its fields first.
func (c jsonCodec) Marshal(v any) ([]byte, error) {
	m, ok := v.(proto.Message)
	if !ok {
		return nil, fmt.Errorf("%T is not a protobuf message", v)
	}
	if len(m.ProtoReflect().GetUnknown()) > 0 {
		b, err := proto.Marshal(m)
		if err != nil {
			return nil, err
		}
		m = m.ProtoReflect().New().Interface()
		if err := proto.Unmarshal(b, m); err != nil {
			return nil, err
		}
	}
	return protojson.Marshal(m)
}

// Unmarshal decodes strictly. Only when that fails on an unknown field does
// it drop every member that names no field, at every depth, and decode
// strictly again, so an unknown enum name is an error even beside unknown
// fields.
func (c jsonCodec) Unmarshal(data []byte, v any) error {
	m, ok := v.(proto.Message)
	if !ok {
		return fmt.Errorf("%T is not a protobuf message", v)
	}
	if len(data) == 0 {
		return errors.New("an empty body is not a JSON object")
	}
	err := protojson.Unmarshal(data, m)
	if err == nil || !strings.Contains(err.Error(), "unknown field") {
		return err
	}
	proto.Reset(m)
	return protojson.Unmarshal(knownFields(data, m.ProtoReflect().Descriptor()), m)
}

// knownFields returns the JSON object data without the members that name
// no field of md, in md's nested messages too. Well-known types keep their
// own JSON forms and are left as they are, and so is anything that is not
// what its field needs (protojson says what is wrong with it).
func knownFields(data []byte, md protoreflect.MessageDescriptor) []byte {
	var obj map[string]json.RawMessage
	if json.Unmarshal(data, &obj) != nil || obj == nil {
		return data
	}
	fields := md.Fields()
	for name, raw := range obj {
		fd := fields.ByJSONName(name)
		if fd == nil {
			fd = fields.ByName(protoreflect.Name(name))
		}
		if fd == nil {
			delete(obj, name)
			continue
		}
		obj[name] = knownIn(raw, fd)
	}
	return marshalOr(obj, data)
}

// knownIn applies knownFields to a field's value: to each message of a
// list or a map, or to the message itself.
func knownIn(raw json.RawMessage, fd protoreflect.FieldDescriptor) json.RawMessage {
	md := fd.Message()
	if fd.IsMap() {
		md = fd.MapValue().Message()
	}
	if md == nil || md.FullName().Parent() == "google.protobuf" {
		return raw
	}
	switch {
	case fd.IsList():
		var items []json.RawMessage
		if json.Unmarshal(raw, &items) != nil {
			return raw
		}
		for i, it := range items {
			items[i] = knownFields(it, md)
		}
		return marshalOr(items, raw)
	case fd.IsMap():
		var entries map[string]json.RawMessage
		if json.Unmarshal(raw, &entries) != nil {
			return raw
		}
		for k, it := range entries {
			entries[k] = knownFields(it, md)
		}
		return marshalOr(entries, raw)
	}
	return knownFields(raw, md)
}

// marshalOr encodes v, or returns as it was what v was decoded from.
func marshalOr(v any, was []byte) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		return was
	}
	return b
}
