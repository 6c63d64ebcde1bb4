package doctor

// InjectionWithScanner is the injection check with ValidatePatch's secret
// scanner replaced.
var InjectionWithScanner = injection
