package maintenance

import (
	"context"
	"log/slog"
	"time"
)

// notifyInterval is how often a notifier looks for webhooks due: a job's
// end is told within about it.
const notifyInterval = time.Second

// Deliverer sends the webhooks due (webhook.Sender).
type Deliverer interface {
	Round(ctx context.Context) (int, error)
}

// NotifierOptions are what a Notifier is built from.
type NotifierOptions struct {
	Deliverer Deliverer
	Log       *slog.Logger
}

// Notifier tells jobs' notify URLs of their ends, each second. Every
// server runs one; the store's claims keep two from sending one end at
// once.
type Notifier struct {
	sweeper
}

// NewNotifier returns a notifier over o.Deliverer.
func NewNotifier(o NotifierOptions) *Notifier {
	n := &Notifier{}
	n.sweeper = sweeper{what: "sent webhooks", interval: notifyInterval, log: orDiscard(o.Log), round: o.Deliverer.Round}
	return n
}
