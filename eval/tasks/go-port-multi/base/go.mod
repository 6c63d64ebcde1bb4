module example.com/netcfg

go 1.19
