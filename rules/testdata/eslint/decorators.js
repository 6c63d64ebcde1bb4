import { observer } from "mobx-react";
@observer
class Store { @observable items = []; }
export default Store;
