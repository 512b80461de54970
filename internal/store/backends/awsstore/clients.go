package awsstore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go/middleware"

	"github.com/spool-run/spool/internal/awsconf"
	"github.com/spool-run/spool/internal/store/storekit"
)

// maxBackoff caps the wait between retries of one request.
const maxBackoff = 5 * time.Second

// clients are the two service clients a store uses, and who hears of
// their retries.
type clients struct {
	db      *dynamodb.Client
	sqs     *sqs.Client
	retries *storekit.Retries
}

// newClients builds the SDK clients for cfg (defaults applied). extra adds
// middleware to every request (tests count requests with it).
func newClients(ctx context.Context, cfg Config, extra ...func(*middleware.Stack) error) (clients, error) {
	dynamoEP, sqsEP := cfg.endpoints()
	override := dynamoEP != "" || sqsEP != ""
	opts := []func(*awsconfig.LoadOptions) error{
		awsconfig.WithRetryer(func() aws.Retryer {
			// Throttling and 5xx are retried with jittered exponential
			// backoff. The client-side retry quota is off: a server must
			// keep retrying under sustained throttling, not fail fast.
			return retry.NewStandard(func(o *retry.StandardOptions) {
				o.MaxAttempts = cfg.MaxRetries + 1
				o.MaxBackoff = maxBackoff
				o.RateLimiter = ratelimit.None
			})
		}),
	}
	awsCfg, err := awsconf.Load(ctx, cfg.Region, override, opts...)
	if err != nil {
		return clients{}, fmt.Errorf("load AWS configuration: %w", err)
	}
	if awsCfg.Region == "" {
		return clients{}, fmt.Errorf("no AWS region: set store.aws.region or AWS_REGION")
	}
	retries := &storekit.Retries{}
	awsCfg.APIOptions = append(awsCfg.APIOptions, countRetries(retries))
	awsCfg.APIOptions = append(awsCfg.APIOptions, extra...)
	return clients{
		retries: retries,
		db: dynamodb.NewFromConfig(awsCfg, func(o *dynamodb.Options) {
			if dynamoEP != "" {
				o.BaseEndpoint = aws.String(dynamoEP)
			}
		}),
		sqs: sqs.NewFromConfig(awsCfg, func(o *sqs.Options) {
			if sqsEP != "" {
				o.BaseEndpoint = aws.String(sqsEP)
			}
		}),
	}, nil
}

// ErrNoCredentials is what the AWS SDK's default sources gave no
// credentials for.
var ErrNoCredentials = errors.New("no AWS credentials")

// noCredentials says where the SDK looked for credentials, in its order,
// and what each had, after it found none (err is its last source's
// failure).
func noCredentials(err error) error {
	set := func(names ...string) string {
		for _, n := range names {
			if os.Getenv(n) != "" {
				return n + " is set"
			}
		}
		return strings.Join(names, " and ") + " unset"
	}
	file := func(env, def string) string {
		p := os.Getenv(env)
		if p == "" {
			p = def
		}
		if _, err := os.Stat(p); err != nil {
			return p + " (not there)"
		}
		return p
	}
	profile := os.Getenv("AWS_PROFILE")
	if profile == "" {
		profile = "default"
	}
	imds := "the EC2 instance's role (instance metadata)"
	if strings.EqualFold(os.Getenv("AWS_EC2_METADATA_DISABLED"), "true") {
		imds += ", off by AWS_EC2_METADATA_DISABLED"
	}
	return fmt.Errorf("%w: the AWS SDK looked in the environment (%s), the shared files %s and %s for profile %q (AWS_PROFILE), a web identity token (%s), the ECS container endpoint (%s) and %s: give it credentials in one of them (aws configure writes the shared files; AWS_PROFILE picks a profile of theirs) (its last answer: %v)",
		ErrNoCredentials, set("AWS_ACCESS_KEY_ID"),
		file("AWS_SHARED_CREDENTIALS_FILE", awsconfig.DefaultSharedCredentialsFilename()), file("AWS_CONFIG_FILE", awsconfig.DefaultSharedConfigFilename()), profile,
		set("AWS_WEB_IDENTITY_TOKEN_FILE"), set("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI"), imds, err)
}
