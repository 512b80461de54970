package client_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/spool-run/spool"
	"github.com/spool-run/spool/client"
)

// Chain jobs: the deploy waits, scheduled, until the build succeeded (had
// the build failed, the deploy would have been cancelled).
func ExampleSubmitParams_after() {
	c, stop := exampleClient()
	defer stop()
	// Bound the wait: a deploy whose build never ends would wait as long.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	build, _, err := c.Submit(ctx, client.SubmitParams{Script: "sleep 0.2; echo built"})
	if err != nil {
		log.Fatal(err)
	}
	deploy, _, err := c.Submit(ctx, client.SubmitParams{Script: "echo deployed", After: []string{build.ID}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("the deploy is", deploy.State)
	for line, err := range c.Lines(ctx, deploy.ID, client.StreamOptions{Follow: true}) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(line.Text)
	}
	build, _ = c.Job(ctx, build.ID)
	fmt.Println("the build", build.State, "and is followed by the deploy:", build.Followers[0] == deploy.ID)
	// Output:
	// the deploy is scheduled
	// deployed
	// the build succeeded and is followed by the deploy: true
}

// Delay a job, and put an urgent one ahead of the queue's others.
func ExampleSubmitParams_runIn() {
	c, stop := exampleClient()
	defer stop()
	ctx := context.Background()
	later, _, err := c.Submit(ctx, client.SubmitParams{Argv: []string{"./cleanup.sh"}, RunIn: time.Hour})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(later.State, "for about", time.Until(later.RunAfter).Round(time.Hour))
	urgent, _, err := c.Submit(ctx, client.SubmitParams{Argv: []string{"true"}, Priority: 1})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("priority", urgent.Priority)
	// Output:
	// scheduled for about 1h0m0s
	// priority 1
}

// Let one deploy run at a time, across every server.
func ExampleClient_SetMaxRunning() {
	c, stop := exampleClient()
	defer stop()
	q, err := c.SetMaxRunning(context.Background(), "deploys", 1)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(q.Name, "runs at most", q.MaxRunning)
	// Output: deploys runs at most 1
}

// Run a command every night at 3 in Paris; skip a night while the last
// one still runs.
func ExampleClient_CreateSchedule() {
	c, stop := exampleClient()
	defer stop()
	ctx := context.Background()
	s, err := c.CreateSchedule(ctx, client.ScheduleParams{Name: "nightly", Cron: "0 3 * * *", Timezone: "Europe/Paris",
		Job: client.SubmitParams{Queue: "builds", Argv: []string{"make", "nightly"}}, Overlap: spool.OverlapSkip})
	if err != nil {
		log.Fatal(err)
	}
	paris, _ := time.LoadLocation("Europe/Paris")
	fmt.Println(s.Name, s.Overlap, s.Missed, "next at", s.NextTickAt.In(paris).Format("15:04"))
	s, err = c.PauseSchedule(ctx, "nightly")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("paused:", s.Paused, "next tick set:", !s.NextTickAt.IsZero())
	// Output:
	// nightly skip run-once next at 03:00
	// paused: true next tick set: false
}
