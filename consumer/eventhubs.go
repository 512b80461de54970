package consumer

import (
	"strings"
)

// EventHubs is what a connection string tells about an Event Hubs
// namespace's Kafka endpoint.
type EventHubs struct {
	// Namespace is the host of the Endpoint, such as
	// mynamespace.servicebus.windows.net.
	Namespace string
	// Broker is Namespace:9093, the Kafka endpoint.
	Broker string
	// EventHub is the EntityPath, the event hub (the Kafka topic); empty
	// when the string is for the whole namespace.
	EventHub string
}

// eventHubsKafkaPort is the port of every namespace's Kafka endpoint.
const eventHubsKafkaPort = "9093"

// ParseEventHubsConnectionString reads a connection string as the Azure
// portal shows it:
//
//	Endpoint=sb://NAMESPACE.servicebus.windows.net/;SharedAccessKeyName=NAME;SharedAccessKey=KEY[;EntityPath=HUB]
//
// Keys are case-insensitive, parts are separated by ';' (a trailing one is
// fine) and values may contain '='. A shared access signature
// (SharedAccessSignature=...) may stand instead of the key and its name.
// Unknown keys are ignored. Errors wrap ErrInvalidConfig and never repeat
// any part of the string, which holds a secret.
func ParseEventHubsConnectionString(cs string) (EventHubs, error) {
	var eh EventHubs
	var endpoint, keyName, key, sas, entity string
	var haveEndpoint, haveKeyName, haveKey, haveSAS, haveEntity bool
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
		return eh, invalid("Event Hubs connection string: Endpoint is not sb://<namespace host>/")
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
	eh.EventHub = entity
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
	default:
		return "EntityPath"
	}
}

// endpointHost returns the lower-cased host of an sb://host/ endpoint. The
// Kafka endpoint always listens on 9093, so the endpoint must not name a
// port or a path, which would mean the string is not what we think.
func endpointHost(ep string) (string, bool) {
	const scheme = "sb://"
	if len(ep) < len(scheme) || asciiLower(ep[:len(scheme)]) != scheme {
		return "", false
	}
	host, path, _ := strings.Cut(ep[len(scheme):], "/")
	if path != "" {
		return "", false
	}
	host = asciiLower(host)
	return host, validHostname(host)
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

// validHostname accepts DNS names: dot-separated labels of letters, digits
// and inner hyphens, 1 to 63 bytes each, 253 in all, with at least one dot
// (a namespace host is always qualified).
func validHostname(h string) bool {
	if len(h) == 0 || len(h) > 253 || !strings.Contains(h, ".") {
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
