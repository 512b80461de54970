package consumer

import (
	"strconv"
	"strings"
)

// EventHubs is what a connection string tells about an Event Hubs
// namespace's Kafka endpoint.
type EventHubs struct {
	// Namespace is the host of the Endpoint, such as
	// mynamespace.servicebus.windows.net, or localhost for the emulator.
	Namespace string
	// Broker is the Kafka endpoint: Namespace:9093, or Namespace:9092
	// for the emulator.
	Broker string
	// EventHub is the EntityPath, the event hub (the Kafka topic); empty
	// when the string is for the whole namespace.
	EventHub string
	// Emulator is set by UseDevelopmentEmulator=true: the string is for
	// the local Event Hubs emulator, whose Kafka endpoint takes SASL
	// PLAIN without TLS.
	Emulator bool
}

// The ports of the Kafka endpoints: every namespace's in Azure (always
// with TLS), and the emulator's (never with TLS). A port in the Endpoint
// is the AMQP port the Azure SDKs use, which says nothing about these.
const (
	eventHubsKafkaPort = "9093"
	emulatorKafkaPort  = "9092"
)

// ParseEventHubsConnectionString reads a connection string as the Azure
// portal shows it:
//
//	Endpoint=sb://NAMESPACE.servicebus.windows.net/;SharedAccessKeyName=NAME;SharedAccessKey=KEY[;EntityPath=HUB]
//
// or as the Event Hubs emulator documents it:
//
//	Endpoint=sb://localhost;SharedAccessKeyName=NAME;SharedAccessKey=KEY;UseDevelopmentEmulator=true
//
// Keys are case-insensitive, parts are separated by ';' (a trailing one is
// fine) and values may contain '='. As in Azure's own SDKs, the Endpoint's
// host may be a single name (localhost, a container's name) and may carry
// a port, and the trailing '/' is optional. A shared access signature
// (SharedAccessSignature=...) may stand instead of the key and its name.
// UseDevelopmentEmulator is true or false. Unknown keys are ignored.
// Errors wrap ErrInvalidConfig and never repeat any part of the string,
// which holds a secret.
func ParseEventHubsConnectionString(cs string) (EventHubs, error) {
	var eh EventHubs
	var endpoint, keyName, key, sas, entity, emulator string
	var haveEndpoint, haveKeyName, haveKey, haveSAS, haveEntity, haveEmulator bool
	for i, part := range strings.Split(cs, ";") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		k, v, ok := strings.Cut(part, "=")
		if !ok {
			// Do not quote the part: a key that contains ';' would
			// be cut into parts like this one.
			return eh, invalid("Event Hubs connection string: part %d has no '='", i+1)
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		var dst *string
		var seen *bool
		switch asciiLower(k) {
		case "endpoint":
			dst, seen = &endpoint, &haveEndpoint
		case "sharedaccesskeyname":
			dst, seen = &keyName, &haveKeyName
		case "sharedaccesskey":
			dst, seen = &key, &haveKey
		case "sharedaccesssignature":
			dst, seen = &sas, &haveSAS
		case "entitypath":
			dst, seen = &entity, &haveEntity
		case "usedevelopmentemulator":
			dst, seen = &emulator, &haveEmulator
		default:
			continue
		}
		if *seen {
			return eh, invalid("Event Hubs connection string: %s appears twice", canonicalKey(k))
		}
		*dst, *seen = v, true
	}

	if !haveEndpoint {
		return eh, invalid("Event Hubs connection string: no Endpoint")
	}
	host, ok := endpointHost(endpoint)
	if !ok {
		return eh, invalid("Event Hubs connection string: Endpoint is not sb://<namespace host>[:port][/]")
	}
	useEmulator := false
	if haveEmulator {
		switch asciiLower(emulator) {
		case "true":
			useEmulator = true
		case "false":
		default:
			return eh, invalid("Event Hubs connection string: UseDevelopmentEmulator is neither true nor false")
		}
	}
	switch {
	case haveSAS && (haveKey || haveKeyName):
		return eh, invalid("Event Hubs connection string: SharedAccessSignature together with SharedAccessKey or SharedAccessKeyName")
	case haveSAS:
		if sas == "" {
			return eh, invalid("Event Hubs connection string: SharedAccessSignature is empty")
		}
	case !haveKeyName || keyName == "":
		return eh, invalid("Event Hubs connection string: no SharedAccessKeyName")
	case !haveKey || key == "":
		return eh, invalid("Event Hubs connection string: no SharedAccessKey")
	}
	if haveEntity && !validTopic(entity) {
		return eh, invalid("Event Hubs connection string: EntityPath is not a valid event hub name (1 to 249 of a-z A-Z 0-9 . _ -)")
	}
	eh.Namespace = host
	eh.Broker = host + ":" + eventHubsKafkaPort
	if useEmulator {
		eh.Broker = host + ":" + emulatorKafkaPort
	}
	eh.EventHub = entity
	eh.Emulator = useEmulator
	return eh, nil
}

// canonicalKey spells a known key as the portal does, for error messages
// that must not echo the input.
func canonicalKey(k string) string {
	switch asciiLower(k) {
	case "endpoint":
		return "Endpoint"
	case "sharedaccesskeyname":
		return "SharedAccessKeyName"
	case "sharedaccesskey":
		return "SharedAccessKey"
	case "sharedaccesssignature":
		return "SharedAccessSignature"
	case "usedevelopmentemulator":
		return "UseDevelopmentEmulator"
	default:
		return "EntityPath"
	}
}

// endpointHost returns the lower-cased host of an sb://host[:port][/]
// endpoint. The port, when there is one, must be a port number but is
// otherwise not used (see eventHubsKafkaPort). A path would mean the
// string is not what we think, so it is refused.
func endpointHost(ep string) (string, bool) {
	const scheme = "sb://"
	if len(ep) < len(scheme) || asciiLower(ep[:len(scheme)]) != scheme {
		return "", false
	}
	hostport, path, _ := strings.Cut(ep[len(scheme):], "/")
	if path != "" {
		return "", false
	}
	host, port, hasPort := strings.Cut(hostport, ":")
	if hasPort && !validPort(port) {
		return "", false
	}
	host = asciiLower(host)
	return host, validHostname(host)
}

// validPort accepts 1 to 65535 in plain decimal digits.
func validPort(p string) bool {
	if p == "" || len(p) > 5 || strings.Trim(p, "0123456789") != "" {
		return false
	}
	n, err := strconv.Atoi(p)
	return err == nil && n >= 1 && n <= 65535
}

// asciiLower lowers A-Z only. strings.ToLower would also map some other
// runes onto ASCII letters (the Kelvin sign onto 'k'), letting look-alike
// keys and hosts through.
func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// validHostname accepts DNS names (and so IPv4 addresses): dot-separated
// labels of letters, digits and inner hyphens, 1 to 63 bytes each, 253 in
// all. A single label is fine: the emulator runs on localhost or under a
// container's name.
func validHostname(h string) bool {
	if len(h) == 0 || len(h) > 253 {
		return false
	}
	for _, label := range strings.Split(h, ".") {
		if len(label) == 0 || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
				return false
			}
		}
	}
	return true
}
