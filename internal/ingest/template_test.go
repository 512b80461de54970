package ingest_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// TestFirehoseTemplate: the CloudFormation template that points a
// CloudWatch Logs subscription at spool delivers to the endpoint spool
// serves, in a form the decoder takes: records left as CloudWatch wrote
// them (no decompression by Firehose), the body gzip or plain, and failed
// deliveries kept in S3 for sending again.
func TestFirehoseTemplate(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "deploy", "aws", "ingest-firehose.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var tmpl struct {
		Resources map[string]struct {
			Type       string    `yaml:"Type"`
			Properties yaml.Node `yaml:"Properties"`
		} `yaml:"Resources"`
	}
	if err := yaml.Unmarshal(raw, &tmpl); err != nil {
		t.Fatalf("deploy/aws/ingest-firehose.yaml: %v", err)
	}
	stream, sub := tmpl.Resources["DeliveryStream"], tmpl.Resources["Subscription"]
	if stream.Type != "AWS::KinesisFirehose::DeliveryStream" || sub.Type != "AWS::Logs::SubscriptionFilter" {
		t.Fatalf("resources: stream %q, subscription %q", stream.Type, sub.Type)
	}
	var props struct {
		Dest struct {
			Endpoint struct {
				URL       yaml.Node `yaml:"Url"`
				AccessKey yaml.Node `yaml:"AccessKey"`
			} `yaml:"EndpointConfiguration"`
			Request struct {
				ContentEncoding string `yaml:"ContentEncoding"`
			} `yaml:"RequestConfiguration"`
			Processing *yaml.Node `yaml:"ProcessingConfiguration"`
			S3Backup   string     `yaml:"S3BackupMode"`
		} `yaml:"HttpEndpointDestinationConfiguration"`
	}
	if err := stream.Properties.Decode(&props); err != nil {
		t.Fatal(err)
	}
	d := props.Dest
	if u := d.Endpoint.URL; u.Tag != "!Sub" || !strings.HasSuffix(u.Value, "/api/v1/ingest/firehose") {
		t.Errorf("Firehose delivers to %s %q, not spool's endpoint", u.Tag, u.Value)
	}
	if k := d.Endpoint.AccessKey; k.Tag != "!Ref" || k.Value != "SpoolIngestKey" {
		t.Errorf("access key %s %q, want the ingest key parameter", k.Tag, k.Value)
	}
	if d.Request.ContentEncoding != "GZIP" && d.Request.ContentEncoding != "NONE" {
		t.Errorf("content encoding %q", d.Request.ContentEncoding)
	}
	if d.Processing != nil {
		t.Errorf("the stream processes records (Firehose's decompression of CloudWatch records?): spool takes them as CloudWatch writes them")
	}
	if d.S3Backup != "FailedDataOnly" && d.S3Backup != "AllData" {
		t.Errorf("S3 backup mode %q: failed deliveries would be lost", d.S3Backup)
	}
}
