package partition

import "fmt"

// Assignment is one period of ownership of one partition by this member:
// from the moment it won the partition's election until its lease ended.
// [Options.OnAssigned] receives it when ownership starts and
// [Options.OnRevoked] when it has ended.
type Assignment struct {
	// Group is the group's name, as given to [New].
	Group string
	// Partition is the partition's number, in [0, n).
	Partition int
	// Token is the fencing token of this ownership: tokens strictly increase
	// across the successive owners of one partition, whichever member holds
	// it. Send it with every write made for the partition and have the
	// resource refuse a token lower than the highest it has seen for that
	// partition.
	Token uint64
}

// String returns a short description such as `orders/7 token 42`.
func (a Assignment) String() string {
	return fmt.Sprintf("%s/%d token %d", a.Group, a.Partition, a.Token)
}
