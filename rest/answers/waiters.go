// Package answers brings the Redis Monitor's answers back to REST callers.
//
// Action, stats and zookeeper requests carry a uuid that their answer on the
// outbound topic repeats. One Consumer per REST instance reads that topic and
// hands each answer to the /feed callers waiting for its uuid (Waiters); an
// answer nobody here is waiting for goes to the poll Store in Redis
// (rest:poll:<uuid>, expiring), where a later /poll on any REST instance
// finds it. Every instance reads every answer, so an answer is stored even
// when the instance whose caller gave up has stopped, as the original does.
package answers

import "sync"

// Waiters matches answers to the requests waiting for them, by uuid. Several
// requests may wait for the same uuid; each gets the answer. It is safe for
// concurrent use.
type Waiters struct {
	mu sync.Mutex
	m  map[string][]*Wait
}

// Wait is one request's registration. C receives the answer (once).
type Wait struct {
	uuid string
	c    chan []byte
}

// C delivers the raw answer.
func (w *Wait) C() <-chan []byte { return w.c }

// NewWaiters returns an empty registry.
func NewWaiters() *Waiters { return &Waiters{m: map[string][]*Wait{}} }

// Add registers interest in uuid. Register before sending the request, so
// an answer arriving at once is not missed; Cancel when done waiting.
func (ws *Waiters) Add(uuid string) *Wait {
	w := &Wait{uuid: uuid, c: make(chan []byte, 1)}
	ws.mu.Lock()
	ws.m[uuid] = append(ws.m[uuid], w)
	ws.mu.Unlock()
	return w
}

// Cancel removes w. It returns the answer when one was delivered in the
// meantime, so a request that times out at the moment its answer arrives
// still gets it.
func (ws *Waiters) Cancel(w *Wait) []byte {
	ws.mu.Lock()
	list := ws.m[w.uuid]
	for i, x := range list {
		if x == w {
			list = append(list[:i], list[i+1:]...)
			break
		}
	}
	if len(list) == 0 {
		delete(ws.m, w.uuid)
	} else {
		ws.m[w.uuid] = list
	}
	ws.mu.Unlock()
	select {
	case a := <-w.c:
		return a
	default:
		return nil
	}
}

// Deliver hands answer to every request waiting for uuid and reports
// whether there was one. Delivered registrations are removed.
func (ws *Waiters) Deliver(uuid string, answer []byte) bool {
	ws.mu.Lock()
	list := ws.m[uuid]
	delete(ws.m, uuid)
	ws.mu.Unlock()
	for _, w := range list {
		w.c <- answer // buffered, and each Wait is delivered to at most once
	}
	return len(list) > 0
}

// Len returns how many requests are waiting.
func (ws *Waiters) Len() int {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	n := 0
	for _, l := range ws.m {
		n += len(l)
	}
	return n
}
