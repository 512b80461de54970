package maintenance

import "time"

// SetInterval makes p sleep up to d between rounds, for tests that show
// what wakes it earlier.
func (p *ScheduledPromoter) SetInterval(d time.Duration) { p.interval = d }
