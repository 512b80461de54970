package consumer_test

import (
	"github.com/spool-run/spool/internal/testcert"

	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/spool-run/spool/consumer"
)

func TestParseEventHubsConnectionString(t *testing.T) {
	good := []struct {
		in   string
		want consumer.EventHubs
	}{
		{"Endpoint=sb://mynamespace.servicebus.windows.net/;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=abc=;EntityPath=myhub",
			consumer.EventHubs{Namespace: "mynamespace.servicebus.windows.net", Broker: "mynamespace.servicebus.windows.net:9093", EventHub: "myhub"}},
		// Keys in any case, spaces, a trailing ';', a key with '='s,
		// no EntityPath, an unknown key.
		{" endpoint = sb://NS.servicebus.windows.net ; sharedaccesskeyname=n;SHAREDACCESSKEY=a=b==;TransportType=Amqp;",
			consumer.EventHubs{Namespace: "ns.servicebus.windows.net", Broker: "ns.servicebus.windows.net:9093"}},
		{"Endpoint=sb://ns.servicebus.windows.net/;SharedAccessSignature=SharedAccessSignature sr=x&sig=y&se=1&skn=z;EntityPath=hub.1_x-y",
			consumer.EventHubs{Namespace: "ns.servicebus.windows.net", Broker: "ns.servicebus.windows.net:9093", EventHub: "hub.1_x-y"}},
		// A port (the AMQP one, not Kafka's) and UseDevelopmentEmulator=false.
		{"Endpoint=sb://ns.servicebus.windows.net:5671/;SharedAccessKeyName=n;SharedAccessKey=k;UseDevelopmentEmulator=false",
			consumer.EventHubs{Namespace: "ns.servicebus.windows.net", Broker: "ns.servicebus.windows.net:9093"}},
		// The emulator's string as its documentation gives it: a host
		// without a dot, no trailing '/'.
		{"Endpoint=sb://localhost;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=SAS_KEY_VALUE;UseDevelopmentEmulator=true;",
			consumer.EventHubs{Namespace: "localhost", Broker: "localhost:9092", Emulator: true}},
		// The emulator under a container's name, with a port, a '/'
		// and a hub; an IPv4 address.
		{"Endpoint=sb://EventHubs-Emulator:5672/;SharedAccessKeyName=n;SharedAccessKey=k;usedevelopmentemulator=TRUE;EntityPath=eh1",
			consumer.EventHubs{Namespace: "eventhubs-emulator", Broker: "eventhubs-emulator:9092", EventHub: "eh1", Emulator: true}},
		{"Endpoint=sb://192.168.1.20:5672;SharedAccessKeyName=n;SharedAccessKey=k;UseDevelopmentEmulator=true",
			consumer.EventHubs{Namespace: "192.168.1.20", Broker: "192.168.1.20:9092", Emulator: true}},
	}
	for _, g := range good {
		got, err := consumer.ParseEventHubsConnectionString(g.in)
		if err != nil || got != g.want {
			t.Errorf("Parse(%q) = %+v, %v; want %+v", g.in, got, err, g.want)
		}
	}

	const key = "s3cretKeyValue="
	bad := []struct{ in, says string }{
		{"", "no Endpoint"},
		{"SharedAccessKeyName=n;SharedAccessKey=" + key, "no Endpoint"},
		{"Endpoint=https://ns.servicebus.windows.net/;SharedAccessKeyName=n;SharedAccessKey=" + key, "Endpoint"},
		{"Endpoint=sb://;SharedAccessKeyName=n;SharedAccessKey=" + key, "Endpoint"},
		{"Endpoint=sb://ns.servicebus.windows.net/path;SharedAccessKeyName=n;SharedAccessKey=" + key, "Endpoint"},
		{"Endpoint=sb://ns.servicebus.windows.net:0/;SharedAccessKeyName=n;SharedAccessKey=" + key, "Endpoint"},
		{"Endpoint=sb://ns.servicebus.windows.net:65536;SharedAccessKeyName=n;SharedAccessKey=" + key, "Endpoint"},
		{"Endpoint=sb://ns.servicebus.windows.net:;SharedAccessKeyName=n;SharedAccessKey=" + key, "Endpoint"},
		{"Endpoint=sb://ns.servicebus.windows.net:amqp;SharedAccessKeyName=n;SharedAccessKey=" + key, "Endpoint"},
		{"Endpoint=sb://localhost:5672:1;SharedAccessKeyName=n;SharedAccessKey=" + key, "Endpoint"},
		{"Endpoint=sb://:5672;SharedAccessKeyName=n;SharedAccessKey=" + key, "Endpoint"},
		{"Endpoint=sb://local_host;SharedAccessKeyName=n;SharedAccessKey=" + key, "Endpoint"},
		{"Endpoint=sb://-localhost;SharedAccessKeyName=n;SharedAccessKey=" + key, "Endpoint"},
		{"Endpoint=sb://ns..windows.net;SharedAccessKeyName=n;SharedAccessKey=" + key, "Endpoint"},
		{"Endpoint=sb://[::1]:5672;SharedAccessKeyName=n;SharedAccessKey=" + key, "Endpoint"},
		{"Endpoint=sb://localhost;SharedAccessKeyName=n;SharedAccessKey=" + key + ";UseDevelopmentEmulator=yes", "UseDevelopmentEmulator is neither true nor false"},
		{"Endpoint=sb://localhost;SharedAccessKeyName=n;SharedAccessKey=" + key + ";UseDevelopmentEmulator=", "UseDevelopmentEmulator is neither true nor false"},
		{"Endpoint=sb://localhost;SharedAccessKeyName=n;SharedAccessKey=" + key + ";UseDevelopmentEmulator=true;UseDevelopmentEmulator=true", "UseDevelopmentEmulator appears twice"},
		{"Endpoint=sb://localhost;SharedAccessKey=" + key + ";UseDevelopmentEmulator=true", "no SharedAccessKeyName"},
		{"Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKey=" + key, "no SharedAccessKeyName"},
		{"Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=n", "no SharedAccessKey"},
		{"Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=n;SharedAccessKey=", "no SharedAccessKey"},
		{"Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=n;SharedAccessKey=" + key + ";sharedaccesskey=" + key, "SharedAccessKey appears twice"},
		{"Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=n;SharedAccessKey=" + key + ";EntityPath=", "EntityPath"},
		{"Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=n;SharedAccessKey=" + key + ";EntityPath=a/b", "EntityPath"},
		{"Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=n;SharedAccessKey=" + key + ";junk", "part 4 has no '='"},
		{"Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=n;SharedAccessKey=" + key + ";SharedAccessSignature=x", "SharedAccessSignature together"},
	}
	for _, b := range bad {
		_, err := consumer.ParseEventHubsConnectionString(b.in)
		switch {
		case !errors.Is(err, consumer.ErrInvalidConfig):
			t.Errorf("Parse(%q): %v, want an ErrInvalidConfig", b.in, err)
		case !strings.Contains(err.Error(), b.says):
			t.Errorf("Parse(%q): %q does not say %q", b.in, err, b.says)
		case strings.Contains(err.Error(), key):
			t.Errorf("Parse(%q): %q repeats the key", b.in, err)
		}
	}
}

// secretMark stands in for the SharedAccessKey in the fuzzer's inputs: no
// error may repeat it.
const secretMark = "Zq7SECRETmXw3Kp"

func FuzzParseEventHubsConnectionString(f *testing.F) {
	for _, s := range []string{
		"Endpoint=sb://mynamespace.servicebus.windows.net/;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=" + secretMark + ";EntityPath=myhub",
		"Endpoint=sb://ns.servicebus.windows.net;SharedAccessKeyName=n;SharedAccessKey=" + secretMark + ";",
		"endpoint=SB://NS.example.com/;sharedaccesssignature=" + secretMark,
		"Endpoint=sb://localhost;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=" + secretMark + ";UseDevelopmentEmulator=true;",
		"Endpoint=sb://eventhubs-emulator:5672/;SharedAccessKeyName=n;SharedAccessKey=" + secretMark + ";UseDevelopmentEmulator=TRUE;EntityPath=eh1",
		"Endpoint=sb://ns.servicebus.windows.net:5671;SharedAccessKeyName=n;SharedAccessKey=" + secretMark + ";UseDevelopmentEmulator=false",
		"Endpoint=sb://localhost:99999;SharedAccessKeyName=n;SharedAccessKey=" + secretMark + ";UseDevelopmentEmulator=" + secretMark,
		"Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=n;SharedAccessKey=" + secretMark + ";EntityPath=" + secretMark,
		";;;=;==",
		"",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, cs string) {
		eh, err := consumer.ParseEventHubsConnectionString(cs)
		if err != nil {
			if !errors.Is(err, consumer.ErrInvalidConfig) {
				t.Fatalf("error %v does not wrap ErrInvalidConfig", err)
			}
			if strings.Contains(err.Error(), secretMark) {
				t.Fatalf("error %q repeats the secret", err)
			}
			if eh != (consumer.EventHubs{}) {
				t.Fatalf("an error with a result: %+v", eh)
			}
			return
		}
		// What is accepted must be usable: a DNS host, its Kafka
		// port (the emulator's or Azure's), a topic name Kafka takes.
		kafkaPort := "9093"
		if eh.Emulator {
			kafkaPort = "9092"
		}
		if eh.Broker != eh.Namespace+":"+kafkaPort {
			t.Fatalf("broker %q for namespace %q", eh.Broker, eh.Namespace)
		}
		if host, port, err := net.SplitHostPort(eh.Broker); err != nil || host != eh.Namespace || port != kafkaPort {
			t.Fatalf("broker %q does not split into the namespace and %s: %v", eh.Broker, kafkaPort, err)
		}
		if eh.Namespace == "" || strings.ToLower(eh.Namespace) != eh.Namespace ||
			strings.Trim(eh.Namespace, "abcdefghijklmnopqrstuvwxyz0123456789-.") != "" ||
			strings.Contains(eh.Namespace, "..") || strings.HasPrefix(eh.Namespace, ".") || strings.HasSuffix(eh.Namespace, ".") {
			t.Fatalf("namespace %q is not a lower-case DNS name", eh.Namespace)
		}
		if eh.EventHub != "" {
			if len(eh.EventHub) > 249 || strings.Trim(eh.EventHub, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") != "" ||
				eh.EventHub == "." || eh.EventHub == ".." {
				t.Fatalf("event hub %q is not a topic name", eh.EventHub)
			}
		}
		// The same string in a Config must pass New's checks whenever
		// it names a hub.
		cfg := consumer.Config{EventHubsConnectionString: cs, Group: "g"}
		c, err := consumer.New(cfg, func(context.Context, []consumer.Message) (bool, error) { return true, nil })
		if (err == nil) != (eh.EventHub != "") {
			t.Fatalf("New with a parsed string: %v (event hub %q)", err, eh.EventHub)
		}
		if c != nil {
			_ = c.Shutdown(context.Background()) // closes the client New made
		}
	})
}

// tlsFiles makes a throwaway CA and a certificate it signs for 127.0.0.1;
// it returns the server's TLS config and a PEM file of the CA.
func tlsFiles(t *testing.T) (*tls.Config, string) {
	t.Helper()
	files, cert := testcert.New(t)
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, files.CA
}

const connString = "Endpoint=sb://spool-test.servicebus.windows.net/;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=c2VjcmV0LWtleQ==;EntityPath=" + topic

// eventHubsCluster is kfake behind TLS that takes SASL PLAIN with the user
// "$ConnectionString" and connString as the password, as Event Hubs does.
func eventHubsCluster(t *testing.T) (*kfake.Cluster, string) {
	t.Helper()
	serverTLS, caFile := tlsFiles(t)
	c := cluster(t, 2, kfake.EnableSASL(), kfake.Superuser("PLAIN", "$ConnectionString", connString), kfake.TLS(serverTLS))
	return c, caFile
}

func TestEventHubs(t *testing.T) {
	c, caFile := eventHubsCluster(t)
	cfg := consumer.Config{
		EventHubsConnectionString: connString,
		Brokers:                   c.ListenAddrs(), // instead of spool-test.servicebus.windows.net:9093
		TLSCAFile:                 caFile,          // instead of the system roots
		Group:                     "$Default",
		BatchSize:                 3,
		BatchTimeout:              100 * time.Millisecond,
		Logger:                    testLogger(),
	}
	batches := make(chan batch, 10)
	r := start(t, cfg, func(_ context.Context, msgs []consumer.Message) (bool, error) {
		batches <- describe(msgs)
		return true, nil
	})

	rec := func(p int32, v string) *kgo.Record { return &kgo.Record{Topic: topic, Partition: p, Value: []byte(v)} }
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	prod, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.DialTLSConfig(clientTLS(t, caFile)), kgo.SASL(plain.Auth{User: "$ConnectionString", Pass: connString}.AsMechanism()))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	if err := prod.ProduceSync(ctx, rec(0, "a"), rec(0, "b"), rec(0, "c"), rec(1, "d"), rec(1, "e"), rec(1, "f")).FirstErr(); err != nil {
		t.Fatal(err)
	}
	got := []string{receive(t, batches, "a batch").String(), receive(t, batches, "a batch").String()}
	slices.Sort(got)
	if want := []string{"p0[0 1 2]", "p1[0 1 2]"}; !slices.Equal(got, want) {
		t.Fatalf("batches %v, want %v", got, want)
	}
	// The consumer's client produces too, on its authenticated TLS
	// connections (a dead-letter topic would use this).
	if err := r.Client().ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("g")}).FirstErr(); err != nil {
		t.Fatalf("producing through Client: %v", err)
	}
	if b := receive(t, batches, "the message produced through Client"); !slices.Equal(b.values, []string{"g"}) || b.offsets[0] != 3 {
		t.Fatalf("batch %v", b)
	}
	r.shutdown(t)
}

// The emulator's connection string: kfake stands in for the emulator's
// Kafka endpoint, which takes SASL PLAIN ("$ConnectionString" and the
// string) over plain TCP. Given no broker, the consumer dials
// localhost:9092, which the test's dialer takes to kfake as a port mapping
// would; given --brokers, it dials them, still without TLS (kfake would not
// understand a TLS handshake).
func TestEventHubsEmulator(t *testing.T) {
	const emulator = "Endpoint=sb://localhost;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=SAS_KEY_VALUE;UseDevelopmentEmulator=true;EntityPath=" + topic
	c := cluster(t, 1, kfake.EnableSASL(), kfake.Superuser("PLAIN", "$ConnectionString", emulator))
	for _, tc := range []struct {
		name    string
		brokers []string
		dialer  bool
	}{
		{"the emulator's own broker", nil, true},
		{"brokers given", c.ListenAddrs(), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var extra []kgo.Opt
			dialled := make(chan string, 100)
			if tc.dialer {
				extra = append(extra, kgo.Dialer(func(ctx context.Context, network, host string) (net.Conn, error) {
					select {
					case dialled <- host:
					default:
					}
					if host == "localhost:9092" {
						host = c.ListenAddrs()[0]
					}
					var d net.Dialer
					return d.DialContext(ctx, network, host)
				}))
			}
			cfg := consumer.Config{
				EventHubsConnectionString: emulator,
				Brokers:                   tc.brokers,
				Group:                     "emulator-" + strings.ReplaceAll(tc.name, " ", "-"),
				BatchSize:                 2,
				BatchTimeout:              100 * time.Millisecond,
				Logger:                    testLogger(),
			}
			batches := make(chan batch, 10)
			r := startWith(t, cfg, func(_ context.Context, msgs []consumer.Message) (bool, error) {
				batches <- describe(msgs)
				return true, nil
			}, extra...)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := r.Client().ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("a")}, &kgo.Record{Topic: topic, Value: []byte("b")}).FirstErr(); err != nil {
				t.Fatalf("producing through Client: %v", err)
			}
			if b := receive(t, batches, "a batch"); !slices.Equal(b.values, []string{"a", "b"}) {
				t.Fatalf("batch %v %q", b, b.values)
			}
			r.shutdown(t)
			if tc.dialer {
				if first := receive(t, dialled, "a dial"); first != "localhost:9092" {
					t.Fatalf("the first broker dialled is %s, want localhost:9092", first)
				}
			}
		})
	}
}

func clientTLS(t *testing.T, caFile string) *tls.Config {
	t.Helper()
	pemBytes, err := os.ReadFile(caFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pemBytes)
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
}

// Credentials the broker rejects end Run with an error that says so, soon,
// instead of a consumer that retries forever; so does a broker certificate
// we do not trust.
func TestEventHubsRejected(t *testing.T) {
	c, caFile := eventHubsCluster(t)
	_, otherCA := tlsFiles(t)
	// kfake hangs up on bad credentials, as brokers did before KIP-152.
	// Kafka since then, and Event Hubs, answer with an error code
	// instead: this cluster does that.
	coded, codedCA := eventHubsCluster(t)
	coded.ControlKey(int16(kmsg.SASLAuthenticate), func(req kmsg.Request) (kmsg.Response, error, bool) {
		coded.KeepControl()
		auth := req.(*kmsg.SASLAuthenticateRequest)
		if strings.HasSuffix(string(auth.SASLAuthBytes), "\x00"+connString) {
			return nil, nil, false
		}
		resp := auth.ResponseKind().(*kmsg.SASLAuthenticateResponse)
		resp.ErrorCode = kerr.SaslAuthenticationFailed.Code
		resp.ErrorMessage = kmsg.StringPtr("Authentication failed during authentication due to invalid credentials with SASL mechanism PLAIN")
		return resp, nil, true
	})
	wrongKey := strings.Replace(connString, "SharedAccessKey=c2VjcmV0LWtleQ==", "SharedAccessKey=d3Jvbmc=", 1)
	for _, tc := range []struct {
		name         string
		c            *kfake.Cluster
		connString   string
		caFile, says string
	}{
		{"wrong key, broker hangs up", c, wrongKey, caFile, "authentication failed"},
		{"wrong key, broker answers", coded, wrongKey, codedCA, "authentication failed"},
		{"untrusted certificate", c, connString, otherCA, "TLS handshake with the broker failed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := consumer.NewWithHooks(consumer.Config{
				EventHubsConnectionString: tc.connString,
				Brokers:                   tc.c.ListenAddrs(),
				TLSCAFile:                 tc.caFile,
				Group:                     "g",
				Logger:                    testLogger(),
			}, func(context.Context, []consumer.Message) (bool, error) {
				t.Error("the handler ran")
				return true, nil
			}, consumer.TestHooks{Kgo: fastGroup})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			began := time.Now()
			err = r.Run(ctx)
			if err == nil || ctx.Err() != nil || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("Run: %v, want an error that says %q", err, tc.says)
			}
			if strings.Contains(err.Error(), "d3Jvbmc=") || strings.Contains(err.Error(), "c2VjcmV0LWtleQ==") {
				t.Fatalf("the error repeats the key: %v", err)
			}
			t.Logf("Run returned after %v: %v", time.Since(began).Round(time.Millisecond), err)
		})
	}
}
