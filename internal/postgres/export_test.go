package postgres

// MigrateSteps applies ms as Migrate applies the embedded migrations.
var MigrateSteps = migrate
