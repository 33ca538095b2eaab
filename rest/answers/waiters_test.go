package answers_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/scrapycluster/scrapy-cluster-go/rest/answers"
)

func TestAnswerGoesToTheRequestWaitingForItsUUID(t *testing.T) {
	ws := answers.NewWaiters()
	a, b := ws.Add("a"), ws.Add("b")
	if !ws.Deliver("b", []byte(`{"uuid": "b"}`)) {
		t.Fatal("no waiter found for b")
	}
	select {
	case got := <-b.C():
		if string(got) != `{"uuid": "b"}` {
			t.Fatalf("b got %s", got)
		}
	case <-time.After(time.Second):
		t.Fatal("b got nothing")
	}
	select {
	case got := <-a.C():
		t.Fatalf("a got b's answer %s", got)
	default:
	}
	if ws.Deliver("b", []byte(`{}`)) {
		t.Fatal("b was delivered to twice")
	}
	if ws.Cancel(a) != nil || ws.Len() != 0 {
		t.Fatalf("after cancel: %d waiting", ws.Len())
	}
	if ws.Deliver("a", []byte(`{}`)) {
		t.Fatal("a cancelled registration was delivered to")
	}
}

func TestEveryRequestWaitingForAUUIDGetsTheAnswer(t *testing.T) {
	ws := answers.NewWaiters()
	w1, w2 := ws.Add("same"), ws.Add("same")
	ws.Deliver("same", []byte("x"))
	if string(<-w1.C()) != "x" || string(<-w2.C()) != "x" {
		t.Fatal("not both got the answer")
	}
}

func TestCancelReturnsAnAnswerDeliveredAtTheLastMoment(t *testing.T) {
	ws := answers.NewWaiters()
	w := ws.Add("u")
	ws.Deliver("u", []byte("late"))
	if got := ws.Cancel(w); string(got) != "late" {
		t.Fatalf("Cancel returned %q", got)
	}
}

func TestCancelKeepsTheOtherRequestsForTheSameUUID(t *testing.T) {
	ws := answers.NewWaiters()
	w1, w2 := ws.Add("u"), ws.Add("u")
	ws.Cancel(w1)
	if !ws.Deliver("u", []byte("y")) || string(<-w2.C()) != "y" {
		t.Fatal("the remaining request lost its answer")
	}
}

func TestManyConcurrentWaitersEachGetTheirOwnAnswer(t *testing.T) {
	ws := answers.NewWaiters()
	const n = 500
	var wg sync.WaitGroup
	errs := make(chan error, n)
	registered := make(chan struct{}, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			uuid := fmt.Sprint("u", i)
			w := ws.Add(uuid)
			registered <- struct{}{}
			select {
			case got := <-w.C():
				if string(got) != uuid {
					errs <- fmt.Errorf("%s got %s", uuid, got)
				}
			case <-time.After(10 * time.Second):
				errs <- fmt.Errorf("%s got nothing", uuid)
			}
			ws.Cancel(w)
		}()
	}
	for range n {
		<-registered
	}
	for i := n - 1; i >= 0; i-- {
		go ws.Deliver(fmt.Sprint("u", i), []byte(fmt.Sprint("u", i)))
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if ws.Len() != 0 {
		t.Fatalf("%d left", ws.Len())
	}
}
