package session

// EventSizeForTest exposes the estimate of one event's memory.
var EventSizeForTest = eventSize
