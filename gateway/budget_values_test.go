package gateway_test

// The budgets (see budget_test.go): measured on linux/amd64, go test
// without and with -race, plus about 10 %. Measured when set (issue 28):
//
//	                         allocs/call  race  bytes/result
//	read_* cached                    490   524          1712  (515, 555 and 2003 before the envelope by
//	                                                            reference and the read encoded once)
//	do_* refused (out_of_range)      812   878          2757
//	can_do, greenhouse               736   784          5222  (809/885 before an answer given again was
//	                                                           encoded once, 914/1001 before the index and
//	                                                           reuse, 1486 and 5367 before the typed check)
//	can_do, 1,000 capabilities     37166     -        609698  (42414 before encoded once, 60193 before the
//	                                                           index and reuse, 147281 before the typed check)
var (
	budgetRead      = budget{allocs: 540, allocsRace: 575, bytes: 1890}
	budgetDoRefused = budget{allocs: 895, allocsRace: 965, bytes: 3030}
	budgetCanDo     = budget{allocs: 810, allocsRace: 865, bytes: 5890}
	budgetCanDo1000 = budget{allocs: 40900, bytes: 671000,
		whyNotRace: "under it, the 400 prefetched reads overrun the 100 ms bus timeout on a loaded machine, so the answer varies"}
)

// The Modbus read budgets (see budget_modbus_test.go), measured when set
// (issue 28, item 5; the same with and without -race), plus about 10 %.
// Raw goburrow's read of the same registers from the same slave is 22
// allocations, the slave's included:
//
//	                   allocs/read  earlier            before item 5
//	background                  22  28 (budget 31)     57
//	cancellable                 30  38 (budget 42)     57
var (
	budgetModbusRead            = budget{allocs: 24, allocsRace: 24}
	budgetModbusReadCancellable = budget{allocs: 33, allocsRace: 33}
)
