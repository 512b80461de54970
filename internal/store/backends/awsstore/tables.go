package awsstore

import (
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// The table definitions Provision creates. deploy/aws/spool.yaml declares
// the same for CloudFormation: change both together.

func attrDef(name string, t types.ScalarAttributeType) types.AttributeDefinition {
	return types.AttributeDefinition{AttributeName: aws.String(name), AttributeType: t}
}

func keySchema(hash, rng string) []types.KeySchemaElement {
	ks := []types.KeySchemaElement{{AttributeName: aws.String(hash), KeyType: types.KeyTypeHash}}
	if rng != "" {
		ks = append(ks, types.KeySchemaElement{AttributeName: aws.String(rng), KeyType: types.KeyTypeRange})
	}
	return ks
}

func include(attrs ...string) *types.Projection {
	return &types.Projection{ProjectionType: types.ProjectionTypeInclude, NonKeyAttributes: attrs}
}

// jobsTable defines the jobs table: jobs and request markers by job_id,
// and three indexes. The listing indexes project only state, so moving a
// job's log head or lease (the frequent writes) does not write them; List
// fetches the page's jobs from the table. The leases index holds keys
// only: ExpireLeases reads each expired job anyway, to decide on it as it
// is now.
func jobsTable(name string) *dynamodb.CreateTableInput {
	return &dynamodb.CreateTableInput{
		TableName:   aws.String(name),
		BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{
			attrDef(aJobID, types.ScalarAttributeTypeS),
			attrDef(aQueue, types.ScalarAttributeTypeS),
			attrDef(aListPart, types.ScalarAttributeTypeS),
			attrDef(aCreatedKey, types.ScalarAttributeTypeS),
			attrDef(aLeasePart, types.ScalarAttributeTypeS),
			attrDef(aLeaseExpires, types.ScalarAttributeTypeN),
		},
		KeySchema: keySchema(aJobID, ""),
		GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{
			{IndexName: aws.String(indexByQueue), KeySchema: keySchema(aQueue, aCreatedKey), Projection: include(aState)},
			{IndexName: aws.String(indexByTime), KeySchema: keySchema(aListPart, aCreatedKey), Projection: include(aState)},
			{IndexName: aws.String(indexLeases), KeySchema: keySchema(aLeasePart, aLeaseExpires),
				Projection: &types.Projection{ProjectionType: types.ProjectionTypeKeysOnly}},
		},
	}
}

// eventsTable defines the events table: one item per stored event, by
// job_id and sequence, and the by-line local index of output items.
func eventsTable(name string) *dynamodb.CreateTableInput {
	return &dynamodb.CreateTableInput{
		TableName:   aws.String(name),
		BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{
			attrDef(aJobID, types.ScalarAttributeTypeS),
			attrDef(aSequence, types.ScalarAttributeTypeN),
			attrDef(aLastLine, types.ScalarAttributeTypeN),
		},
		KeySchema: keySchema(aJobID, aSequence),
		LocalSecondaryIndexes: []types.LocalSecondaryIndex{
			{IndexName: aws.String(indexByLine), KeySchema: keySchema(aJobID, aLastLine),
				Projection: &types.Projection{ProjectionType: types.ProjectionTypeKeysOnly}},
		},
	}
}

// indexNames lists the indexes a table definition declares.
func indexNames(in *dynamodb.CreateTableInput) []string {
	var out []string
	for _, g := range in.GlobalSecondaryIndexes {
		out = append(out, aws.ToString(g.IndexName))
	}
	for _, l := range in.LocalSecondaryIndexes {
		out = append(out, aws.ToString(l.IndexName))
	}
	return out
}
