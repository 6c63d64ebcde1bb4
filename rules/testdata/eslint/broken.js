// Not JavaScript in any dialect: the scan must say so.
function (
