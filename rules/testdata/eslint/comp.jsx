export default function App() { return <div data-x="1" xlink:href="#a" {...props} />; }
