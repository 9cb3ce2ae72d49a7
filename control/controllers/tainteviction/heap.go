package tainteviction

import (
	"container/heap"
	"time"
)

// heapItem is one deadline; gen tells a live entry from one left behind by a
// rescheduled or cancelled deletion, which is skipped when it surfaces.
type heapItem struct {
	at  time.Time
	key podKey
	gen uint64
}

// deadlineHeap orders deadlines earliest first, so Run needs one timer however many
// pods wait.
type deadlineHeap struct{ items heapItems }

type heapItems []heapItem

func (h heapItems) Len() int           { return len(h) }
func (h heapItems) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h heapItems) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *heapItems) Push(x any)        { *h = append(*h, x.(heapItem)) }
func (h *heapItems) Pop() any {
	old := *h
	it := old[len(old)-1]
	*h = old[:len(old)-1]
	return it
}

func (d *deadlineHeap) Len() int         { return d.items.Len() }
func (d *deadlineHeap) push(it heapItem) { heap.Push(&d.items, it) }
func (d *deadlineHeap) peek() heapItem   { return d.items[0] }
func (d *deadlineHeap) pop() heapItem    { return heap.Pop(&d.items).(heapItem) }
