package awsstore_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"go.yaml.in/yaml/v3"

	"github.com/spool-run/spool/internal/store/backends/awsstore"
)

// The parts of deploy/aws/spool.yaml that must match what Provision makes.
type cfnKey struct {
	AttributeName string `yaml:"AttributeName"`
	KeyType       string `yaml:"KeyType"`
}

type cfnIndex struct {
	IndexName  string   `yaml:"IndexName"`
	KeySchema  []cfnKey `yaml:"KeySchema"`
	Projection struct {
		ProjectionType   string   `yaml:"ProjectionType"`
		NonKeyAttributes []string `yaml:"NonKeyAttributes"`
	} `yaml:"Projection"`
}

type cfnTable struct {
	Properties struct {
		AttributeDefinitions []struct {
			AttributeName string `yaml:"AttributeName"`
			AttributeType string `yaml:"AttributeType"`
		} `yaml:"AttributeDefinitions"`
		KeySchema              []cfnKey   `yaml:"KeySchema"`
		GlobalSecondaryIndexes []cfnIndex `yaml:"GlobalSecondaryIndexes"`
		LocalSecondaryIndexes  []cfnIndex `yaml:"LocalSecondaryIndexes"`
		TimeToLive             *struct {
			AttributeName string `yaml:"AttributeName"`
			Enabled       bool   `yaml:"Enabled"`
		} `yaml:"TimeToLiveSpecification"`
	} `yaml:"Properties"`
}

type cfnQueue struct {
	Properties struct {
		ReceiveMessageWaitTimeSeconds int `yaml:"ReceiveMessageWaitTimeSeconds"`
		MessageRetentionPeriod        int `yaml:"MessageRetentionPeriod"`
	} `yaml:"Properties"`
}

// TestTemplateMatchesProvision: the CloudFormation template declares the
// same tables, indexes and queue settings as Provision.
func TestTemplateMatchesProvision(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(filepath.Join("..", "..", "..", "..", "deploy", "aws", "spool.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var tmpl struct {
		Resources map[string]yaml.Node `yaml:"Resources"`
	}
	if err := yaml.Unmarshal(raw, &tmpl); err != nil {
		t.Fatalf("deploy/aws/spool.yaml: %v", err)
	}
	for name, want := range map[string]*dynamodb.CreateTableInput{
		"JobsTable":   awsstore.JobsTable("x"),
		"EventsTable": awsstore.EventsTable("x"),
	} {
		node := tmpl.Resources[name]
		var got cfnTable
		if err := node.Decode(&got); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		p := got.Properties
		var attrs []string
		for _, a := range p.AttributeDefinitions {
			attrs = append(attrs, a.AttributeName+":"+a.AttributeType)
		}
		var wantAttrs []string
		for _, a := range want.AttributeDefinitions {
			wantAttrs = append(wantAttrs, aws.ToString(a.AttributeName)+":"+string(a.AttributeType))
		}
		if !slices.Equal(attrs, wantAttrs) {
			t.Errorf("%s attributes %v, Provision has %v", name, attrs, wantAttrs)
		}
		if g, w := keys(p.KeySchema), sdkKeys(want.KeySchema); g != w {
			t.Errorf("%s key %s, Provision has %s", name, g, w)
		}
		var idx, wantIdx []string
		for _, i := range append(p.GlobalSecondaryIndexes, p.LocalSecondaryIndexes...) {
			idx = append(idx, i.IndexName+" "+keys(i.KeySchema)+" "+i.Projection.ProjectionType+" "+fmtList(i.Projection.NonKeyAttributes))
		}
		for _, i := range want.GlobalSecondaryIndexes {
			wantIdx = append(wantIdx, aws.ToString(i.IndexName)+" "+sdkKeys(i.KeySchema)+" "+projection(i.Projection))
		}
		for _, i := range want.LocalSecondaryIndexes {
			wantIdx = append(wantIdx, aws.ToString(i.IndexName)+" "+sdkKeys(i.KeySchema)+" "+projection(i.Projection))
		}
		if !slices.Equal(idx, wantIdx) {
			t.Errorf("%s indexes\n%v\nProvision has\n%v", name, idx, wantIdx)
		}
		// Provision enables TTL on both tables (events always expire;
		// final jobs do with a jobs retention).
		if p.TimeToLive == nil || !p.TimeToLive.Enabled || p.TimeToLive.AttributeName != "ttl" {
			t.Errorf("%s has no TTL on ttl", name)
		}
	}

	loop := tmpl.Resources["Fn::ForEach::Queues"]
	if loop.Kind != yaml.SequenceNode || len(loop.Content) != 3 {
		t.Fatal("Fn::ForEach::Queues is not a loop over QueueNames")
	}
	var body map[string]yaml.Node
	if err := loop.Content[2].Decode(&body); err != nil {
		t.Fatal(err)
	}
	queues := map[string]cfnQueue{}
	for name, node := range body {
		if name == "Fn::ForEach::Priorities" {
			// The queues of the priorities but the default, one each.
			var prios []string
			if len(node.Content) != 3 || node.Content[1].Decode(&prios) != nil {
				t.Fatal("Fn::ForEach::Priorities is not a loop over priorities")
			}
			if !slices.Equal(prios, awsstore.OtherPriorities()) {
				t.Errorf("the template makes queues of priorities %v, Provision of %v", prios, awsstore.OtherPriorities())
			}
			var inner map[string]cfnQueue
			if err := node.Content[2].Decode(&inner); err != nil {
				t.Fatal(err)
			}
			for n, q := range inner {
				queues[n] = q
			}
			continue
		}
		var q cfnQueue
		if err := node.Decode(&q); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		queues[name] = q
	}
	if len(queues) != 2+1 {
		t.Errorf("the template's loop declares %d queues, want a queue, its dead-letter queue and one per other priority", len(queues))
	}
	for name, q := range queues {
		if q.Properties.MessageRetentionPeriod != awsstore.MessageRetention {
			t.Errorf("%s keeps messages %d s, Provision %d", name, q.Properties.MessageRetentionPeriod, awsstore.MessageRetention)
		}
		if q.Properties.ReceiveMessageWaitTimeSeconds != awsstore.QueueWaitSeconds {
			t.Errorf("%s waits %d s by default, Provision %d", name, q.Properties.ReceiveMessageWaitTimeSeconds, awsstore.QueueWaitSeconds)
		}
	}
}

func keys(ks []cfnKey) (s string) {
	for _, k := range ks {
		s += k.AttributeName + "/" + k.KeyType + " "
	}
	return s
}

func sdkKeys(ks []types.KeySchemaElement) (s string) {
	for _, k := range ks {
		s += aws.ToString(k.AttributeName) + "/" + string(k.KeyType) + " "
	}
	return s
}

func projection(p *types.Projection) string {
	return string(p.ProjectionType) + " " + fmtList(p.NonKeyAttributes)
}

func fmtList(l []string) string { return "[" + strings.Join(l, ",") + "]" }
