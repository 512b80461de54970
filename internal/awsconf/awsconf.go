// Package awsconf loads the AWS SDK's configuration the way every part of
// spool that calls AWS does (the AWS store, the S3 blob store, scatters'
// S3 items): from the SDK's usual sources (environment, shared
// configuration, instance or task role), and, when an endpoint override
// points at a local look-alike (moto, LocalStack, MinIO), with a region
// and credentials that such a server accepts when the machine has none.
package awsconf

import (
	"context"
	"os"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
)

// LocalRegion is the region used with an endpoint override when none is
// configured: local servers accept any.
const LocalRegion = "us-east-1"

// localCredentials sign requests to an endpoint override when the
// environment names no credentials: local servers check none, and asking
// the SDK's other sources (an EC2 instance's metadata) would only wait.
var localCredentials = credentials.NewStaticCredentialsProvider("spool-local", "spool-local", "")

// Load is the SDK's configuration for region ("": the SDK's own sources).
// With local set (an endpoint override is configured) it has a region
// (LocalRegion) and credentials (static ones) even where the machine has
// none. opts add to the SDK's load options. The region may still be empty
// without local: callers say which setting names it.
func Load(ctx context.Context, region string, local bool, opts ...func(*awsconfig.LoadOptions) error) (aws.Config, error) {
	if region != "" {
		opts = append(opts, awsconfig.WithRegion(region))
	}
	if local && !CredentialsInEnv() {
		opts = append(opts, awsconfig.WithCredentialsProvider(localCredentials))
	}
	cfg, err := awsconfig.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return aws.Config{}, err
	}
	if local && cfg.Region == "" {
		cfg.Region = LocalRegion
	}
	return cfg, nil
}

// CredentialsInEnv reports whether the environment names credentials for
// the SDK: keys, a profile, a web identity or a container's.
func CredentialsInEnv() bool {
	for _, v := range []string{"AWS_ACCESS_KEY_ID", "AWS_PROFILE", "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"} {
		if os.Getenv(v) != "" {
			return true
		}
	}
	return false
}
