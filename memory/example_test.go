package memory_test

import (
	"context"
	"fmt"

	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/memory"
	"github.com/loomkit/loom/memory/memmemory"
	"github.com/loomkit/loom/session"
	"github.com/loomkit/loom/session/memsession"
)

func Example() {
	ctx := context.Background()
	sessions := memsession.NewService()
	mem := memory.NewService(memmemory.New())
	defer mem.Close()

	// A past conversation...
	sess, _ := sessions.Create(ctx, session.Key{AppName: "travel", UserID: "alice", SessionID: "trip-1"}, nil)
	for _, ev := range []*event.Event{
		event.NewUserText("inv-1", "I prefer a window seat on long flights"),
		event.NewModelText("inv-1", "planner", "Noted: vegetarian meal and a window seat"),
		event.NewUserText("inv-1", "Book the hotel near the station"),
	} {
		if err := sessions.AppendEvent(ctx, sess, ev); err != nil {
			fmt.Println(err)
		}
	}
	// ...is remembered...
	if err := mem.AddSession(ctx, sess); err != nil {
		fmt.Println(err)
	}
	// ...and found from any later session of the same user, best match
	// (most query words) first.
	res, _ := mem.Search(ctx, "travel", "alice", "Which SEAT for LONG flights?", nil)
	for _, e := range res {
		fmt.Printf("%s (%s): %s\n", e.Author, e.SessionID, e.Text())
	}
	res, _ = mem.Search(ctx, "travel", "bob", "seat", nil)
	fmt.Println("bob's results:", len(res))
	// Output:
	// user (trip-1): I prefer a window seat on long flights
	// planner (trip-1): Noted: vegetarian meal and a window seat
	// bob's results: 0
}

// AddEvents remembers some events of a session, such as those of the turn
// that just ended; adding an event again keeps one memory of it.
func ExampleService_AddEvents() {
	ctx := context.Background()
	sessions := memsession.NewService()
	mem := memory.NewService(memmemory.New())
	defer mem.Close()

	sess, _ := sessions.Create(ctx, session.Key{AppName: "travel", UserID: "alice", SessionID: "trip-1"}, nil)
	turn := func(inv, question, answer string) {
		evs := []*event.Event{event.NewUserText(inv, question), event.NewModelText(inv, "planner", answer)}
		for _, ev := range evs {
			if err := sessions.AppendEvent(ctx, sess, ev); err != nil {
				fmt.Println(err)
			}
		}
		if err := mem.AddEvents(ctx, sess, evs); err != nil {
			fmt.Println(err)
		}
	}
	turn("inv-1", "Find a train to Porto", "The train to Porto leaves at nine")
	turn("inv-2", "And a hotel in Porto?", "Booked a hotel by the river")
	// Adding the last event again changes nothing. The entry with more of
	// the query's words comes first.
	if err := mem.AddEvents(ctx, sess, []*event.Event{sess.At(sess.Len() - 1)}); err != nil {
		fmt.Println(err)
	}
	res, _ := mem.Search(ctx, "travel", "alice", "hotel river", nil)
	for _, e := range res {
		fmt.Printf("%s: %s\n", e.Author, e.Text())
	}
	// Output:
	// planner: Booked a hotel by the river
	// user: And a hotel in Porto?
}
