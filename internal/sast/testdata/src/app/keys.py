client_secret = "Xv7Qe2Rt9Yp4Wm1Zk8Ls3Nd6Hb0Jc5Gf"
