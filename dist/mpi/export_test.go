package mpi

// SetMaxCount sets the chunk size of MPI calls (elements) and returns a
// function that restores it.
func SetMaxCount(n int) (restore func()) {
	old := maxCount
	maxCount = n
	return func() { maxCount = old }
}
