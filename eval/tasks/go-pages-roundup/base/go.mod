module example.com/paging

go 1.19
